#!/usr/bin/env python3
"""`rate-total.py PORT CLIENTS WARM END`: CLIENTS keep-alive clients GET /huge
from 127.0.0.1:PORT at once; prints the total rate they read
between warm and end seconds (one thread, selectors, non-blocking)."""
import selectors, socket, sys, time
port, clients, warm, end = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
sel = selectors.DefaultSelector()
buf = bytearray(256 << 10)
start = time.monotonic()
for _ in range(clients):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /huge HTTP/1.1\r\nHost: x\r\n\r\n")
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
counted = 0
while True:
    now = time.monotonic()
    if now - start >= end:
        break
    for key, _ in sel.select(0.05):
        try:
            n = key.fileobj.recv_into(buf)
        except BlockingIOError:
            continue
        if n == 0:
            sys.exit("body ended early")
        if time.monotonic() - start >= warm:
            counted += n
rate = counted / (end - warm)
print(f"{clients} clients: {rate/2**20:.1f} MiB/s")
