import type { IncomingMessage } from 'node:http';

/**
 * Reads a request body as bytes, refusing it (null) as soon as it is known to exceed `limit`: at
 * once when Content-Length says so, else the moment the streamed bytes pass it. The rest is never
 * read; the caller answers 413 and closes the connection.
 */
export function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve(null);
  // A stream something else already read to its end would never emit 'end' again: fail, don't wait.
  if (req.readableEnded) return Promise.reject(new Error('The request body was already consumed'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
