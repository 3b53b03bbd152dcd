#!/usr/bin/env python3
"""By-hand end-to-end check with the real openai SDK (pip install openai).

Starts a fake model server, runs the release binary in front of it, and checks what the issues'
"done when" lines promise: passthrough returns the upstream's answer unchanged (streaming and not);
the opencode harness answers normally, titles a first turn (/titles/{id} and its stream), makes no
title on a second turn, hides the title from another caller, and keeps it across a restart.

    cargo build --release && python3 scripts/sdk-check.py
"""
import json, os, socket, subprocess, sys, tempfile, threading, time, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai

CHUNKS = [
    {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": "mock-model",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello"}, "finish_reason": None}]},
    {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": "mock-model",
     "choices": [{"index": 0, "delta": {"content": " world"}, "finish_reason": "stop"}]},
]
COMPLETION = {"id": "chatcmpl-9", "object": "chat.completion", "created": 1, "model": "mock-model",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello world"}, "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
SEEN = []


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        SEEN.append(body)
        is_title = "You are a title generator" in json.dumps(body)
        if not body.get("stream"):
            data = json.dumps(COMPLETION).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        chunks = ([{"choices": [{"index": 0, "delta": {"content": "Greeting"}}]},
                   {"choices": [{"index": 0, "delta": {"content": " check-in"}}]}] if is_title else CHUNKS)
        for chunk in chunks:
            self.chunk(f"data: {json.dumps(chunk)}\n\n".encode())
        self.chunk(b"data: [DONE]\n\n")
        self.chunk(b"")

    def chunk(self, data):
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_proxy(upstream, port, db):
    env = dict(os.environ, HARNESS_PROXY__TITLES__STORE=f"sqlite://{db}", HARNESS_PROXY__LOG_LEVEL="warn")
    proc = subprocess.Popen(["target/release/harness-proxy", "--upstream", upstream, "--listen", f"127.0.0.1:{port}"], env=env)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz")
            return proc
        except OSError:
            time.sleep(0.05)
    raise SystemExit("proxy did not start")


def get(url, key):
    request = urllib.request.Request(url, headers={"authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def check(label, ok):
    print(("ok   " if ok else "FAIL ") + label)
    if not ok:
        check.failed = True


check.failed = False


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_port}/v1"
    port = free_port()
    db = os.path.join(tempfile.mkdtemp(), "titles.db")
    proxy = start_proxy(upstream, port, db)
    base = f"http://127.0.0.1:{port}"
    try:
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="key-alice", default_headers={"x-harness": "passthrough"})
        messages = [{"role": "user", "content": "hello"}]
        answer = client.chat.completions.create(model="mock-model", messages=messages)
        check("passthrough, not streaming: the upstream's answer unchanged", answer.model_dump(exclude_unset=True) == COMPLETION)
        streamed = [c.model_dump(exclude_unset=True) for c in client.chat.completions.create(model="mock-model", messages=messages, stream=True)]
        check("passthrough, streaming: the upstream's chunks unchanged", streamed == CHUNKS)

        alice = openai.OpenAI(base_url=f"{base}/v1", api_key="key-alice", default_headers={"x-harness": "opencode"})
        raw = alice.chat.completions.with_raw_response.create(model="mock-model", messages=[{"role": "user", "content": "hey there"}])
        completion = raw.parse()
        conversation = raw.headers["x-conversation-id"]
        check("opencode first turn: normal answer", completion.choices[0].message.content == "Hello world")
        check("opencode first turn: x-title-url", raw.headers.get("x-title-url") == f"/titles/{conversation}")
        for _ in range(100):
            status, text = get(f"{base}/titles/{conversation}", "key-alice")
            if status == 200 and json.loads(text)["status"] != "pending":
                break
            time.sleep(0.02)
        record = json.loads(text)
        check(f"title recorded: {record.get('title')!r}", record["status"] == "done" and record["title"] == "Greeting check-in")
        status, text = get(f"{base}/titles/{conversation}/stream", "key-alice")
        check("title stream replays done", text == 'event: done\ndata: {"title":"Greeting check-in"}\n\n')
        titles_before = sum("You are a title generator" in json.dumps(b) for b in SEEN)
        alice.chat.completions.create(model="mock-model", messages=[
            {"role": "user", "content": "hey there"}, {"role": "assistant", "content": "Hello world"},
            {"role": "user", "content": "and again"}], extra_headers={"x-conversation-id": conversation})
        titles_after = sum("You are a title generator" in json.dumps(b) for b in SEEN)
        check("second turn makes no title request", titles_before == titles_after == 1)
        status, _ = get(f"{base}/titles/{conversation}", "key-bob")
        check("another caller cannot see it", status == 404)

        proxy.terminate()
        proxy.wait(10)
        check("SIGTERM: exit 0", proxy.returncode == 0)
        proxy = start_proxy(upstream, port, db)
        status, text = get(f"{base}/titles", "key-alice")
        check("a restarted proxy still lists it", status == 200 and json.loads(text)["data"][0]["id"] == conversation)
    finally:
        proxy.terminate()
        proxy.wait(10)
    sys.exit(1 if check.failed else 0)


if __name__ == "__main__":
    main()
