# Sandbox URLs are http://<id>--<twin>.localhost:<port>. Browsers and curl resolve *.localhost to loopback
# themselves (RFC 6761); glibc without systemd's nss-myhostname does not. The tests put this folder on
# PYTHONPATH so Python resolves them as a browser would (test/helpers/sandbox-hosts.ts does it for Node).
import socket

_getaddrinfo = socket.getaddrinfo


def _resolve_localhost(host, *args, **kwargs):
    if isinstance(host, str) and host.rstrip(".").lower().endswith(".localhost"):
        host = "127.0.0.1"
    return _getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _resolve_localhost
