# Sandbox URLs are http://<id>--<twin>.localhost:<port>. Browsers and curl resolve *.localhost to loopback
# themselves (RFC 6761); glibc without systemd's nss-myhostname does not. The tests load this file
# (ruby -r) so Ruby resolves them as a browser would (test/helpers/sandbox-hosts.ts does it for Node).
require 'socket'

module TwinboxLocalhost
  def self.loopback(host)
    host.is_a?(String) && host.downcase.sub(/\.\z/, '').end_with?('.localhost') ? '127.0.0.1' : host
  end

  # Socket.tcp (Net::HTTP since Ruby 3.1) resolves through Addrinfo.getaddrinfo; older Net::HTTP opens a
  # TCPSocket with the name.
  module Resolve
    def getaddrinfo(host, *rest, **kw)
      super(TwinboxLocalhost.loopback(host), *rest, **kw)
    end
  end

  module Open
    def open(host, *rest, **kw, &block)
      super(TwinboxLocalhost.loopback(host), *rest, **kw, &block)
    end

    def new(host, *rest, **kw, &block)
      super(TwinboxLocalhost.loopback(host), *rest, **kw, &block)
    end
  end
end

Addrinfo.singleton_class.prepend(TwinboxLocalhost::Resolve)
TCPSocket.singleton_class.prepend(TwinboxLocalhost::Open)
