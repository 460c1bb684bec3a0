import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Drives examples/java/UnixDomainSocketFactory as an HTTP client library does: a socket from the
 * factory, its timeout set, two requests on it one after the other (keep-alive), each answer read
 * by its Content-Length. Prints one line per answer: the status and the body.
 */
public final class UnixSocketClient {
  public static void main(String[] args) throws IOException {
    UnixDomainSocketFactory factory = new UnixDomainSocketFactory(Path.of(args[0]));
    try (Socket socket = factory.createSocket("localhost", 80)) {
      socket.setSoTimeout(5000);
      socket.setTcpNoDelay(true);
      OutputStream out = socket.getOutputStream();
      InputStream in = socket.getInputStream();
      for (int i = 0; i < 2; i++) {
        out.write("GET /api/v1/tickets HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
        System.out.println(answer(in));
      }
      System.out.println("closed-before-close " + socket.isClosed());
    }
  }

  private static String answer(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) throw new IOException("closed in the answer head");
      head.write(b);
    }
    String text = head.toString(StandardCharsets.US_ASCII);
    int length = 0;
    for (String line : text.split("\r\n")) {
      if (line.toLowerCase().startsWith("content-length:")) length = Integer.parseInt(line.substring(15).trim());
    }
    byte[] body = in.readNBytes(length);
    return text.split(" ")[1] + " " + new String(body, StandardCharsets.UTF_8);
  }
}
