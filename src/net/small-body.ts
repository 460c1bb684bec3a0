import type { Dispatcher } from 'undici';

/**
 * Reads an answer's body whole as UTF-8 text when it is at most `maxBytes`; a larger body is
 * destroyed as soon as it passes the limit and undefined is returned, so a server that answers a
 * small document's request with something else never makes the process hold it.
 */
export async function readSmallBody(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
