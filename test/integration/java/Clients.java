import java.net.HttpURLConnection;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/**
 * Java 17's two standard HTTP clients against the proxy and straight against the gateway:
 * args are the proxy's base URL, the gateway's base URL and a Bearer token for the direct calls.
 * Prints one line per call: client, target, status, the ETag as each client's lookup finds it.
 */
public class Clients {
  public static void main(String[] args) throws Exception {
    String proxy = args[0], gateway = args[1], bearer = "Bearer " + args[2];
    // newHttpClient() prefers HTTP/2 and offers Upgrade: h2c with HTTP2-Settings on plain http.
    HttpClient client = HttpClient.newHttpClient();
    for (String[] target : new String[][] {{"proxy", proxy, null}, {"gateway", gateway, bearer}}) {
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(target[1] + "/api/v1/tickets"));
      if (target[2] != null) b.header("Authorization", target[2]);
      HttpResponse<String> r = client.send(b.build(), HttpResponse.BodyHandlers.ofString());
      System.out.println("HttpClient " + target[0] + " " + r.statusCode() + " " + r.version() + " "
          + r.headers().firstValue("ETag").orElse("null") + " " + r.body().contains("TCK-1001"));

      HttpURLConnection c = (HttpURLConnection) URI.create(target[1] + "/api/v1/tickets").toURL().openConnection();
      if (target[2] != null) c.setRequestProperty("Authorization", target[2]);
      int status = c.getResponseCode();
      c.getInputStream().readAllBytes();
      // getHeaderFields() is keyed case-sensitively: "ETag" is found only if sent as "ETag".
      var etag = c.getHeaderFields().get("ETag");
      System.out.println("HttpURLConnection " + target[0] + " " + status + " HTTP_1_1 "
          + (etag == null ? "null" : etag.get(0)) + " true");
    }
  }
}
