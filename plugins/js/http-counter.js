// The HTTP counter in JavaScript, for `wardlock serve` (see plugins/http-counter
// for the Rust original and the protocol):
//
//   POST /<name>   take the exclusive lock <name>, read the integer in
//                  /data/<name> (0 if absent), write it + 1 and answer 200 with
//                  the new value and the grant's token in `fencing-token`.
//
// Bad paths or lock names get 400 with the lock error's text, other lock
// errors (a timeout, a lock lost before its release) 503, anything else 500.

import { Fields, OutgoingBody, OutgoingResponse, ResponseOutparam } from 'wasi:http/types@0.2.12';
import { LockError, withLock } from '../../guest-sdk/js/wardlock.js';
import { readValue, writeValue } from './wasi-file.js';

const encoder = new TextEncoder();

function reply(out, status, text, token) {
  const headers = new Fields();
  headers.append('content-type', encoder.encode('text/plain; charset=utf-8'));
  if (token !== undefined) headers.append('fencing-token', encoder.encode(String(token)));
  const response = new OutgoingResponse(headers);
  response.setStatusCode(status);
  const body = response.body();
  ResponseOutparam.set(out, { tag: 'ok', val: response });
  const stream = body.write();
  stream.blockingWriteAndFlush(encoder.encode(`${text}\n`));
  stream[Symbol.dispose]();
  OutgoingBody.finish(body, undefined);
}

function increment(name) {
  try {
    return withLock(name, {}, (lock) => {
      const path = `/data/${name}`;
      const value = readValue(path) + 1n;
      writeValue(path, value);
      return [200, String(value), lock.fencingToken];
    });
  } catch (e) {
    if (!(e instanceof LockError)) return [500, e.message];
    return [e.kind === 'invalid-name' || e.kind === 'denied' ? 400 : 503, e.message];
  }
}

export const incomingHandler = {
  handle(request, out) {
    if (request.method().tag !== 'post') {
      reply(out, 405, 'use POST /<name>');
      return;
    }
    const path = (request.pathWithQuery() ?? '/').split('?')[0];
    const name = path.replace(/^\/+/, '');
    if (name === '') {
      reply(out, 400, 'no counter name: POST /<name>');
      return;
    }
    const [status, text, token] = increment(name);
    reply(out, status, text, token);
  },
};
