import http from 'node:http';

/**
 * A lean JSON client over node:http with kept-alive sockets, for benches whose client shares the
 * server's process: undici's `fetch` turns each request body into a Web stream, which costs this one
 * thread several hundred µs per POST more than per GET (bench/tools.ts), all charged to the server's
 * throughput. Answers the parsed body; another status than `expected` throws.
 */
export function jsonClient(base: string, headers: Record<string, string>, maxSockets = 16) {
  const { hostname, port } = new URL(base);
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const send = (method: string, path: string, body?: unknown, extra: Record<string, string> = {}, expected = 200) =>
    new Promise<any>((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const length = data === undefined ? {} : { 'content-length': String(Buffer.byteLength(data)) };
      const request = http.request(
        { host: hostname, port, path, method, agent, headers: { ...headers, ...extra, ...length } },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (response.statusCode !== expected)
              reject(new Error(`${path} → ${response.statusCode} ${text.slice(0, 200)}`));
            else resolve(text === '' ? undefined : JSON.parse(text));
          });
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(data);
    });
  return { send, close: () => agent.destroy() };
}
