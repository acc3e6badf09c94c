// Helpers shared by the JavaScript guests: a counter file read and written
// through `wasi:filesystem` (the JS engine has no file API of its own), and
// ending a guest with a message. Lock helpers are the SDK's,
// guest-sdk/js/wardlock.js. Bundled into each component by componentize-js.

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

/** An error that ends the guest with a message (and exit code 1). */
export class GuestError extends Error {}

/** Bad arguments: the message is the usage line. */
export class UsageError extends GuestError {}

let preopens;

/** The preopened directory holding `path` and the path relative to it. */
function resolve(path) {
  // Looked up on first use, never at build time (componentize-js snapshots
  // the module after running its top level).
  preopens ??= getDirectories();
  let best;
  for (const [dir, base] of preopens) {
    const prefix = base === '.' ? '' : base.endsWith('/') ? base : `${base}/`;
    const inside = prefix === '' ? !path.startsWith('/') : path.startsWith(prefix);
    if (inside && (!best || prefix.length > best.prefix.length)) best = { dir, prefix };
  }
  if (!best) throw new GuestError(`${path} is not inside a preopened directory`);
  return [best.dir, path.slice(best.prefix.length)];
}

/** The integer in `path` as a BigInt; a missing or empty (whitespace-only) file is 0. */
export function readValue(path) {
  const [dir, relative] = resolve(path);
  let file;
  try {
    file = dir.openAt({ symlinkFollow: true }, relative, {}, { read: true });
  } catch (e) {
    if (e.payload === 'no-entry') return 0n;
    throw new GuestError(`reading ${path}: ${e.payload ?? e.message}`);
  }
  const chunks = [];
  try {
    for (let offset = 0n; ; ) {
      const [chunk, end] = file.read(4096n, offset);
      chunks.push(chunk);
      offset += BigInt(chunk.length);
      if (end || chunk.length === 0) break;
    }
  } catch (e) {
    throw new GuestError(`reading ${path}: ${e.payload ?? e.message}`);
  } finally {
    file[Symbol.dispose]();
  }
  const text = chunks.map((c) => new TextDecoder().decode(c)).join('').trim();
  if (text === '') return 0n;
  if (!/^[0-9]+$/.test(text)) throw new GuestError(`${path} does not hold an integer (${JSON.stringify(text)})`);
  return BigInt(text);
}

/** Replaces the contents of `path` with `value`. */
export function writeValue(path, value) {
  const [dir, relative] = resolve(path);
  let bytes = new TextEncoder().encode(String(value));
  try {
    const file = dir.openAt({ symlinkFollow: true }, relative, { create: true, truncate: true }, { write: true });
    try {
      for (let offset = 0n; bytes.length > 0; ) {
        const written = file.write(bytes, offset);
        bytes = bytes.subarray(Number(written));
        offset += written;
      }
    } finally {
      file[Symbol.dispose]();
    }
  } catch (e) {
    if (e instanceof GuestError) throw e;
    throw new GuestError(`writing ${path}: ${e.payload ?? e.message}`);
  }
}

/**
 * Runs `main` as the guest called `who`: an error is printed on stderr (the
 * usage line as it is, anything else prefixed by `who: `) and ends `run` with
 * an error.
 */
export function runMain(who, main) {
  try {
    main();
  } catch (e) {
    console.error(e instanceof UsageError ? e.message : `${who}: ${e instanceof GuestError ? e.message : e}`);
    throw e; // an exception thrown out of `run` makes it return `err` (exit code 1)
  }
}
