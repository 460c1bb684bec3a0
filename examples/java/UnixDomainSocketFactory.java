import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import javax.net.SocketFactory;

/**
 * Connections to ticket-auth-proxy's Unix socket for an HTTP client that takes a SocketFactory
 * (OkHttp's socketFactory, Apache HttpClient's connection socket factory), Java 16 or newer:
 *
 *   OkHttpClient client = new OkHttpClient.Builder()
 *       .socketFactory(new UnixDomainSocketFactory(Path.of("/var/run/ticket-auth-proxy/proxy.sock")))
 *       .build();
 *   client.newCall(new Request.Builder().url("http://localhost/api/v1/tickets").build()).execute();
 *
 * The host and port of the URL name nothing: every connection goes to the socket. A
 * UnixDomainSocketAddress has no java.net.Socket of its own (SocketChannel.socket() refuses one),
 * hence the small Socket below, which reads and writes through the channel. Before Java 19 a
 * channel's streams do not read and write at once (JDK-8279339): fine for HTTP/1.1's request, then
 * answer; not for a body still being sent while the answer arrives.
 */
public final class UnixDomainSocketFactory extends SocketFactory {
  private final UnixDomainSocketAddress address;

  public UnixDomainSocketFactory(Path socket) {
    this.address = UnixDomainSocketAddress.of(socket);
  }

  @Override
  public Socket createSocket() {
    return new ChannelSocket(address);
  }

  @Override
  public Socket createSocket(String host, int port) throws IOException {
    return connected();
  }

  @Override
  public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
    return connected();
  }

  @Override
  public Socket createSocket(InetAddress host, int port) throws IOException {
    return connected();
  }

  @Override
  public Socket createSocket(InetAddress host, int port, InetAddress localHost, int localPort) throws IOException {
    return connected();
  }

  private Socket connected() throws IOException {
    Socket socket = createSocket();
    socket.connect(null);
    return socket;
  }

  /** A Socket over a channel to the Unix socket; the address it is asked to connect to is ignored. */
  private static final class ChannelSocket extends Socket {
    private final UnixDomainSocketAddress address;
    private SocketChannel channel;
    private InputStream in;
    private OutputStream out;
    private int soTimeoutMs;

    ChannelSocket(UnixDomainSocketAddress address) {
      this.address = address;
    }

    @Override
    public void connect(SocketAddress ignored) throws IOException {
      connect(ignored, 0);
    }

    @Override
    public void connect(SocketAddress ignored, int timeoutMs) throws IOException {
      channel = SocketChannel.open(address);
      in = Channels.newInputStream(channel);
      out = Channels.newOutputStream(channel);
    }

    @Override
    public InputStream getInputStream() {
      return in;
    }

    @Override
    public OutputStream getOutputStream() {
      return out;
    }

    // The channel's streams block without a timeout: a client's own call timeout bounds a call.
    @Override
    public void setSoTimeout(int timeoutMs) {
      soTimeoutMs = timeoutMs;
    }

    @Override
    public int getSoTimeout() {
      return soTimeoutMs;
    }

    // No TCP here: nothing to set.
    @Override
    public void setTcpNoDelay(boolean on) {}

    @Override
    public void setKeepAlive(boolean on) {}

    @Override
    public boolean isConnected() {
      return channel != null && channel.isConnected();
    }

    @Override
    public boolean isClosed() {
      return channel != null && !channel.isOpen();
    }

    @Override
    public boolean isInputShutdown() {
      return isClosed();
    }

    @Override
    public boolean isOutputShutdown() {
      return isClosed();
    }

    @Override
    public void shutdownInput() throws IOException {
      channel.shutdownInput();
    }

    @Override
    public void shutdownOutput() throws IOException {
      channel.shutdownOutput();
    }

    @Override
    public synchronized void close() throws IOException {
      if (channel != null) channel.close();
      super.close();
    }
  }
}
