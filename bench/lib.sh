# Shell functions of bench/ab and bench/pair (sourced; bash, python3).

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

fill() {  # the 1,000-key data set, in one pipeline
  python3 - "$1" <<'EOF'
import socket, sys
port = int(sys.argv[1])
def enc(*a):
    out = b"*%d\r\n" % len(a)
    for x in a:
        x = str(x).encode()
        out += b"$%d\r\n%s\r\n" % (len(x), x)
    return out
keys = ["mk:%012d" % i for i in range(1000)]
cmds = [enc("DEL", *keys)] + [enc("CF.RESERVE", k, 100000) for k in keys]
cmds += [enc("CF.INSERT", k, "ITEMS", *["%012d" % (i * 10) for i in range(100)]) for k in keys]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"".join(cmds))
want = len(cmds)
buf = b""
# replies: DEL -> :n, RESERVE -> +OK, INSERT -> *100 then 100 × :1 (counted as lines)
lines = 1 + 1000 + 1000 * 101
while buf.count(b"\r\n") < lines:
    d = s.recv(1 << 20)
    if not d:
        sys.exit("fill: connection closed")
    buf += d
if b"\r\n-" in buf or buf.startswith(b"-"):
    sys.exit("fill: an error reply")
EOF
}
