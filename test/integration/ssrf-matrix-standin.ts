/**
 * The stand-in for a public host of the SSRF matrix (ssrf-matrix.test.ts): a raw HTTP/1.1 server on 127.0.0.2
 * whose every answer is written by hand (redirects, lengths, framing). It records `METHOD path` of each request.
 *
 * Paths:
 * - `/ok.png` a 4-byte image; `/missing` 404; `/no-head.png` 405 to HEAD, the image to GET;
 * - `/r?to=<url>` a 302 to `<url>`; `/hop/<n>` n more 302s, then the image;
 * - `/declared-17mib`, `/chunked-17mib`, `/length-and-chunked`, `/two-lengths`: oversized or broken framing;
 * - `/late/<path>`: a plain 200 image to HEAD (what the acceptance probe asks), `<path>` to GET (what dispatch
 *   asks), so that dispatch's own checks are exercised on a URL whose answer changed after acceptance.
 * A HEAD is answered with the head alone, as HTTP wants.
 */
import net from 'node:net';

const MiB = 1024 * 1024;
const OK_HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 4';

function answer(socket: net.Socket, method: string, path: string): void {
  const head = method === 'HEAD';
  const u = new URL(path, 'http://x');
  const send = (status: string, body: Buffer | string = ''): void => {
    socket.end(Buffer.concat([Buffer.from(`${status}\r\nConnection: close\r\n\r\n`), Buffer.from(head ? '' : body)]));
  };
  if (u.pathname.startsWith('/late/')) {
    return head ? send(OK_HEAD) : answer(socket, method, path.slice('/late'.length));
  }
  if (u.pathname === '/ok.png') return send(OK_HEAD, 'PNG!');
  if (u.pathname === '/no-head.png') return head ? send('HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\nContent-Length: 0') : answer(socket, method, '/ok.png');
  if (u.pathname === '/r') return send(`HTTP/1.1 302 Found\r\nLocation: ${u.searchParams.get('to') ?? '/'}\r\nContent-Length: 0`);
  const hop = /^\/hop\/(\d+)$/.exec(u.pathname);
  if (hop) {
    const left = Number(hop[1]);
    return left === 0 ? answer(socket, method, '/ok.png') : send(`HTTP/1.1 302 Found\r\nLocation: /hop/${left - 1}\r\nContent-Length: 0`);
  }
  if (u.pathname === '/declared-17mib') {
    // says 17 MiB and sends a little: the length alone must refuse it, unread
    const status = `HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: ${17 * MiB}`;
    if (head) return send(status);
    socket.write(`${status}\r\n\r\n`);
    socket.write(Buffer.alloc(1024));
    return;
  }
  if (u.pathname === '/chunked-17mib') {
    // no length declared: only counting refuses it, at dispatch
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nTransfer-Encoding: chunked\r\n\r\n');
    if (head) return void socket.end();
    const block = Buffer.alloc(256 * 1024, 0x41);
    let sent = 0;
    const pump = () => {
      while (sent < 17 * MiB && !socket.destroyed) {
        sent += block.length;
        if (!socket.write(Buffer.concat([Buffer.from(`${block.length.toString(16)}\r\n`), block, Buffer.from('\r\n')]))) return void socket.once('drain', pump);
      }
      if (!socket.destroyed) socket.end('0\r\n\r\n');
    };
    return pump();
  }
  if (u.pathname === '/length-and-chunked') {
    // a body larger than its declared length, smuggled as chunks behind a small Content-Length
    return send('HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 4\r\nTransfer-Encoding: chunked', `100000\r\n${'A'.repeat(0x100000)}\r\n0\r\n\r\n`);
  }
  if (u.pathname === '/two-lengths') {
    return send('HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 4\r\nContent-Length: 17825792', 'PNG!');
  }
  send('HTTP/1.1 404 Not Found\r\nContent-Length: 0');
}

/** The stand-in's server; `requests` receives `METHOD path` of every request, in order. */
export function createStandin(requests: string[]): net.Server {
  return net.createServer((socket) => {
    let head = '';
    socket.on('error', () => undefined);
    socket.on('data', (c: Buffer) => {
      if (head.includes('\r\n\r\n')) return;
      head += c.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      const [method = 'GET', path = '/'] = head.split(' ');
      requests.push(`${method} ${path}`);
      answer(socket, method, path);
    });
  });
}
