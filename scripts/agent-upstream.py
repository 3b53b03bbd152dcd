#!/usr/bin/env python3
"""By-hand fake model server for real-agent runs: it drives a coding agent through a scripted tool
round trip and records every request it receives. Standard library only; loopback only.

Speaks Chat Completions (any path ending in /chat/completions) and Anthropic Messages (any path
ending in /v1/messages), streamed (SSE) or not; GET .../models lists a few models. For capture only
it also answers Gemini (`:streamGenerateContent`, `:generateContent`, `:countTokens`) and Responses
(POST .../responses; a WebSocket upgrade GET .../responses gets 426) with the plan's last text.
Anything else is recorded and answered 404.

The plan is a JSON list of steps: {"call": {"name": "bash", "arguments": {"command": "ls {cwd}"}}}
or {"text": "done"}; a call step may carry "say": text the answer gives before its call. A
request that offers tools gets step N, N = the tool results already in its
conversation (Chat: role "tool" messages; Messages: tool_result blocks); past the end, the last
text. A call step names a tool the request must offer, else the answer is a PLAN ERROR text. A
request without tools (a title or helper call) gets --title-text. With --text-only every request
gets step N, N = the assistant messages already in it (steps {"raw_text": "..."}), tools or not.
With --search-plan (or --search-text TEXT, the plan [{"text": TEXT}]) a request whose system text
holds opencode's search-agent prompt ("You are a file search specialist", the explore sub-agent a
`task` call starts) is answered from that plan instead, by the same rule: the main conversation
follows --plan, the sub-agent its own (e.g. Gemini CLI's sub-agent must end with complete_task).

  python3 scripts/agent-upstream.py --port 0 --record /tmp/rec.jsonl --workdir /tmp/w \\
      --plan-inline '[{"call":{"name":"bash","arguments":{"command":"echo hi > {cwd}/a.txt"}}},{"text":"done"}]'
  # prints "listening on http://127.0.0.1:PORT"; point the agent at http://127.0.0.1:PORT/v1
"""

import argparse
import base64
import gzip
import itertools
import json
import os
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ARGS = None
PLAN = []
SEARCH_PLAN = []
LOCK = threading.Lock()
IDS = itertools.count(1)
MODELS = ["gpt-4.1-mini", "claude-sonnet-4-5", "gemini-2.5-flash"]


def new_id(prefix):
    return f"{prefix}{int(time.time())}{next(IDS):04d}"


def fill_cwd(value):
    if isinstance(value, str):
        return value.replace("{cwd}", ARGS.workdir)
    if isinstance(value, list):
        return [fill_cwd(v) for v in value]
    if isinstance(value, dict):
        return {k: fill_cwd(v) for k, v in value.items()}
    return value


def last_text(plan=None):
    for step in reversed(PLAN if plan is None else plan):
        if "text" in step or "raw_text" in step:
            return step.get("text", step.get("raw_text"))
    return "ok"


def tool_names(body):
    """Names of the offered tools: Chat {function: {name}}, Messages/Responses {name}, Gemini."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    tools += [f for t in tools for f in t.get("functionDeclarations") or []]
    return [n for n in ((t.get("function") or {}).get("name") or t.get("name") for t in tools) if n]


def count_results(body, chat):
    msgs = body.get("messages") or []
    if chat:
        return sum(1 for m in msgs if m.get("role") == "tool")
    return sum(1 for m in msgs if isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")


SEARCH_OPENING = "You are a file search specialist"


def system_text(body):
    """The request's system text: Chat/Responses system or developer messages, Messages `system`."""
    parts = []
    sysf = body.get("system")
    if isinstance(sysf, str):
        parts.append(sysf)
    elif isinstance(sysf, list):
        parts += [b.get("text", "") for b in sysf if isinstance(b, dict)]
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") in ("system", "developer"):
            c = m.get("content")
            parts += [c] if isinstance(c, str) else [b.get("text", "") for b in c or [] if isinstance(b, dict)]
    return "\n".join(parts)


def is_search_agent(body):
    return (ARGS.search_opening or SEARCH_OPENING) in system_text(body)


def decide(body, chat):
    """('text', str) or ('call', name, arguments, say) for this request."""
    if SEARCH_PLAN and is_search_agent(body):
        print("search sub-agent request: answering from the search plan", file=sys.stderr, flush=True)
        return step_for(SEARCH_PLAN, body, chat)
    if ARGS.text_only:
        n = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        step = PLAN[min(n, len(PLAN) - 1)] if PLAN else {}
        return ("text", step.get("raw_text", step.get("text", last_text())))
    if not tool_names(body):
        return ("text", ARGS.title_text)
    return step_for(PLAN, body, chat)


def step_for(plan, body, chat):
    """Step N of the plan, N = the tool results already in the request's conversation."""
    offered = tool_names(body)
    n = count_results(body, chat)
    if n >= len(plan):
        return ("text", last_text(plan))
    step = plan[n]
    if "call" not in step:
        return ("text", step.get("text", step.get("raw_text", "")))
    name = step["call"]["name"]
    if name not in offered:
        msg = f"PLAN ERROR: tool {name} not offered; offered: {', '.join(offered)}"
        print(msg, file=sys.stderr, flush=True)
        return ("text", msg)
    return ("call", name, fill_cwd(step["call"].get("arguments", {})), step.get("say", ""))


def pieces(s, n=3):
    size = max(1, -(-len(s) // n))
    return [s[i:i + size] for i in range(0, len(s), size)] or [""]


REASONING = "Thinking about the next step of the plan."
# What a Messages server sends in place of thinking it will not show (opaque to the client).
REDACTED = base64.b64encode(b"fake-redacted-thinking").decode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # one line per request is printed by record()
        pass

    # ---- plumbing -------------------------------------------------------------------------
    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        else:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        enc = self.headers.get("Content-Encoding", "").lower()
        if enc in ("gzip", "deflate"):
            raw = gzip.decompress(raw) if enc == "gzip" else zlib.decompress(raw)
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:  # not JSON (or an encoding we cannot undo): keep it readable
            text = raw.decode("utf-8", "replace")
            return {"_raw_text": text} if "\ufffd" not in text else {"_raw_base64": base64.b64encode(raw).decode()}

    def record(self, body):
        u = urlsplit(self.path)
        rec = {"time": time.time(), "method": self.command, "path": u.path,
               "query": {k: v if len(v) > 1 else v[0] for k, v in parse_qs(u.query).items()},
               "headers": dict(self.headers.items()), "body": body}
        if ARGS.record:
            with LOCK, open(ARGS.record, "a") as f:
                f.write(json.dumps(rec) + "\n")
        tools = len(tool_names(body)) if isinstance(body, dict) else 0
        print(f"{self.command} {self.path} tools={tools}", file=sys.stderr, flush=True)

    def send_json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, data, event=None):
        head = f"event: {event}\n" if event else ""
        payload = data if isinstance(data, str) else json.dumps(data)
        self.wfile.write(f"{head}data: {payload}\n\n".encode())
        self.wfile.flush()

    # ---- routes ---------------------------------------------------------------------------
    def do_HEAD(self):
        self.record(None)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.record(None)
        path = urlsplit(self.path).path
        if path.endswith("/models"):
            return self.send_json({"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in MODELS]})
        if path.endswith("/responses") and "websocket" in self.headers.get("Upgrade", "").lower():
            return self.send_json({"error": {"message": "websockets not supported"}}, 426)
        self.send_json({"error": {"message": f"not found: {path}"}}, 404)

    def do_POST(self):
        body = self.read_body()
        self.record(body)
        path = urlsplit(self.path).path
        body = body if isinstance(body, dict) else {}
        if path.endswith("/chat/completions"):
            return self.route_chat(body)
        if path.endswith("/v1/messages"):
            return self.route_messages(body)
        if path.endswith("/v1/messages/count_tokens"):
            return self.send_json({"input_tokens": 10})
        if ":streamGenerateContent" in path or ":generateContent" in path:
            return self.route_gemini(":streamGenerateContent" in path)
        if ":countTokens" in path:
            return self.send_json({"totalTokens": 10})
        if path.endswith("/responses"):
            return self.route_responses(body)
        self.send_json({"error": {"message": f"not found: {path}"}}, 404)

    # ---- Chat Completions -----------------------------------------------------------------
    def route_chat(self, body):
        act, model = decide(body, chat=True), body.get("model", "fake")
        cid, call_id = new_id("chatcmpl-"), new_id("call_")
        finish = "tool_calls" if act[0] == "call" else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            msg = {"role": "assistant", "content": act[1] if act[0] == "text" else (act[3] or None)}
            if ARGS.reasoning:
                msg["reasoning_content"] = REASONING
            if act[0] == "call":
                msg["tool_calls"] = [{"id": call_id, "type": "function", "function": {
                    "name": act[1], "arguments": json.dumps(act[2])}}]
            return self.send_json({"id": cid, "object": "chat.completion", "created": int(time.time()),
                                   "model": model, "usage": usage, "choices": [
                                       {"index": 0, "message": msg, "finish_reason": finish}]})

        def chunk(delta, fin=None):
            self.sse({"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                      "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]})
        self.start_sse()
        chunk({"role": "assistant", "content": ""})
        if ARGS.reasoning:
            for p in pieces(REASONING):
                chunk({"reasoning_content": p})
        if act[0] == "text":
            for p in pieces(act[1]):
                chunk({"content": p})
        else:
            for p in pieces(act[3]) if act[3] else []:
                chunk({"content": p})
            chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                   "function": {"name": act[1], "arguments": ""}}]})
            for p in pieces(json.dumps(act[2])):
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]})
        chunk({}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            self.sse({"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                      "model": model, "choices": [], "usage": usage})
        self.sse("[DONE]")

    # ---- Anthropic Messages ---------------------------------------------------------------
    def route_messages(self, body):
        act, model = decide(body, chat=False), body.get("model", "fake")
        mid, tid, sig = new_id("msg_"), new_id("toolu_"), base64.b64encode(b"fake-signature").decode()
        stop = "tool_use" if act[0] == "call" else "end_turn"
        blocks = []
        if ARGS.reasoning:
            blocks.append({"type": "thinking", "thinking": REASONING, "signature": sig})
        if ARGS.redacted:
            blocks.append({"type": "redacted_thinking", "data": REDACTED})
        if act[0] == "text":
            blocks.append({"type": "text", "text": act[1]})
        else:
            if act[3]:
                blocks.append({"type": "text", "text": act[3]})
            blocks.append({"type": "tool_use", "id": tid, "name": act[1], "input": act[2]})
        usage = {"input_tokens": 10, "output_tokens": 5}
        if not body.get("stream"):
            return self.send_json({"id": mid, "type": "message", "role": "assistant", "model": model,
                                   "content": blocks, "stop_reason": stop, "stop_sequence": None,
                                   "usage": usage})
        self.start_sse()
        ev = lambda name, obj: self.sse(dict(type=name, **obj), event=name)  # noqa: E731
        ev("message_start", {"message": {"id": mid, "type": "message", "role": "assistant",
                                         "model": model, "content": [], "stop_reason": None,
                                         "stop_sequence": None, "usage": usage}})
        for i, b in enumerate(blocks):
            if b["type"] == "thinking":
                ev("content_block_start", {"index": i, "content_block": {"type": "thinking", "thinking": ""}})
                for p in pieces(REASONING):
                    ev("content_block_delta", {"index": i, "delta": {"type": "thinking_delta", "thinking": p}})
                ev("content_block_delta", {"index": i, "delta": {"type": "signature_delta", "signature": sig}})
            elif b["type"] == "redacted_thinking":
                ev("content_block_start", {"index": i, "content_block": b})
            elif b["type"] == "text":
                ev("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}})
                for p in pieces(b["text"]):
                    ev("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": p}})
            else:
                ev("content_block_start", {"index": i, "content_block": dict(b, input={})})
                for p in pieces(json.dumps(b["input"])):
                    ev("content_block_delta", {"index": i, "delta": {"type": "input_json_delta",
                                                                     "partial_json": p}})
            ev("content_block_stop", {"index": i})
        ev("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                             "usage": {"output_tokens": 5}})
        ev("message_stop", {})

    # ---- capture only: Gemini API and Responses -------------------------------------------
    def route_gemini(self, stream):
        answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": last_text()}]},
                                  "finishReason": "STOP", "index": 0}],
                  "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1,
                                    "totalTokenCount": 11}}
        if not stream:
            return self.send_json(answer)
        self.start_sse()
        self.sse(answer)

    def route_responses(self, body):
        text = last_text() if body.get("tools") else ARGS.title_text
        rid, item = new_id("resp_"), {"type": "message", "id": new_id("msg_"), "role": "assistant",
                                       "status": "completed",
                                       "content": [{"type": "output_text", "text": text, "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        resp = {"id": rid, "object": "response", "status": "completed", "model": body.get("model"),
                "output": [item], "usage": usage}
        if not body.get("stream"):
            return self.send_json(resp)
        self.start_sse()
        self.sse({"type": "response.created", "response": dict(resp, status="in_progress", output=[])},
                 "response.created")
        self.sse({"type": "response.output_item.done", "output_index": 0, "item": item},
                 "response.output_item.done")
        self.sse({"type": "response.completed", "response": resp}, "response.completed")


def main():
    global ARGS, PLAN, SEARCH_PLAN
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--record", help="append one JSON line per request to this file")
    ap.add_argument("--plan", help="JSON file with the list of steps")
    ap.add_argument("--plan-inline", help="the list of steps as a JSON string")
    ap.add_argument("--workdir", default=".", help="replaces {cwd} in call arguments")
    ap.add_argument("--title-text", default="Scripted title")
    ap.add_argument("--text-only", action="store_true", help="answer raw_text steps, tools or not")
    ap.add_argument("--reasoning", action="store_true", help="stream a short reasoning first")
    ap.add_argument("--redacted", action="store_true",
                    help="Messages answers also carry a redacted_thinking block (after the thinking)")
    ap.add_argument("--search-text", help="answer a search sub-agent's requests (system text holds "
                    "opencode's search prompt) with this text, outside the plan")
    ap.add_argument("--search-plan", help="JSON file: the steps for a search sub-agent's requests")
    ap.add_argument("--search-opening", help="system text that marks a sub-agent's request instead "
                    "of opencode's search prompt (e.g. the claude-code harness's child prompt)")
    ARGS = ap.parse_args()
    ARGS.workdir = os.path.abspath(ARGS.workdir)
    if ARGS.plan:
        with open(ARGS.plan) as f:
            PLAN = json.load(f)
    elif ARGS.plan_inline:
        PLAN = json.loads(ARGS.plan_inline)
    if ARGS.search_plan:
        with open(ARGS.search_plan) as f:
            SEARCH_PLAN = json.load(f)
    elif ARGS.search_text is not None:
        SEARCH_PLAN = [{"text": ARGS.search_text}]
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
