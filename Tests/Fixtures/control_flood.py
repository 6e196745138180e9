"""ControlLoopTests' flood: holds COUNT idle connections to the control socket SOCKET in a process of its own,
so that the test process never holds descriptors above 1024 (with 1,500 of them open there, Foundation's
Process.run in a test beside it overran a buffer: a CI run crashed in DaemonHarness.launch).

    control_flood.py SOCKET COUNT

Prints "ready" once every connection is made. On a line on stdin it prints the first line each connection
has been sent (one line each, for those sent anything), then "done", and holds the connections until stdin
closes."""
import resource
import socket
import sys

path, count = sys.argv[1], int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
clients = []
for _ in range(count):
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    clients.append(client)
print("ready", flush=True)
sys.stdin.readline()
for client in clients:
    try:
        data = client.recv(4096, socket.MSG_DONTWAIT)
    except BlockingIOError:
        continue
    if data:
        print(data.split(b"\n")[0].decode(errors="replace"))
print("done", flush=True)
sys.stdin.read()
