#!/usr/bin/env python3
"""By-hand sizing run (docs/operations.md "Sizing"): N concurrent streaming first turns through
one proxy process, each also titled, against a local fake model server; prints the proxy's
resident memory idle, at peak and after. Standard library only; loopback only; bounded in count
and time.

  cargo build --release --bin harness-proxy
  python3 scripts/measure-streams.py --streams 1000 --store redis://127.0.0.1:6379/15
"""

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time

CHUNK = ('data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
         '"choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}\n\n')


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


async def fake_upstream(reader, writer, events, gap):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        for _ in range(events):
            data = CHUNK.encode()
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await writer.drain()
            await asyncio.sleep(gap)
        done = b"data: [DONE]\n\n"
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def one_stream(port, n):
    body = json.dumps({"model": "m", "stream": True, "messages": [
        {"role": "user", "content": f"question number {n}"}]}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                 b"authorization: Bearer sizing\r\nx-conversation-id: size-%d-%d\r\n"
                 b"content-length: %d\r\nconnection: close\r\n\r\n%s"
                 % (os.getpid(), n, len(body), body))
    await writer.drain()
    received = 0
    while chunk := await reader.read(65536):
        received += len(chunk)
    writer.close()
    return received


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--events", type=int, default=40)
    ap.add_argument("--gap", type=float, default=0.1, help="seconds between events")
    ap.add_argument("--store", default="memory")
    ap.add_argument("--binary", default="target/release/harness-proxy")
    ap.add_argument("--after", type=float, default=5.0,
                    help="seconds after the streams end to read the resident memory again")
    args = ap.parse_args()

    server = await asyncio.start_server(
        lambda r, w: fake_upstream(r, w, args.events, args.gap), "127.0.0.1", 0, backlog=4096)
    up_port = server.sockets[0].getsockname()[1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ,
               HARNESS_PROXY__LISTEN=f"127.0.0.1:{port}",
               HARNESS_PROXY__UPSTREAM__BASE_URL=f"http://127.0.0.1:{up_port}/v1",
               HARNESS_PROXY__TITLES__STORE=args.store,
               HARNESS_PROXY__TITLES__REDIS_PREFIX=f"sizing-{os.getpid()}",
               HARNESS_PROXY__LOG_LEVEL="warn")
    proxy = subprocess.Popen([args.binary, "serve"], env=env)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        idle = rss_kib(proxy.pid)
        peak = [idle]

        async def sample():
            while True:
                peak[0] = max(peak[0], rss_kib(proxy.pid))
                await asyncio.sleep(0.05)

        sampler = asyncio.create_task(sample())
        started = time.monotonic()
        sizes = await asyncio.wait_for(
            asyncio.gather(*(one_stream(port, n) for n in range(args.streams))), timeout=120)
        took = time.monotonic() - started
        sampler.cancel()
        await asyncio.sleep(args.after)
        after = rss_kib(proxy.pid)
        ok = sum(1 for s in sizes if s > args.events * len(CHUNK))
        print(json.dumps({
            "streams": args.streams, "complete": ok, "events_each": args.events,
            "seconds": round(took, 2), "store": args.store.split("@")[-1],
            "rss_idle_mib": round(idle / 1024, 1), "rss_peak_mib": round(peak[0] / 1024, 1),
            "rss_after_mib": round(after / 1024, 1),
            "vmhwm_mib": round(rss_kib(proxy.pid, "VmHWM") / 1024, 1),
        }))
    finally:
        proxy.terminate()
        proxy.wait(timeout=40)
        server.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
