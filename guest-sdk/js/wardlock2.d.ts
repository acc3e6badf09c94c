// Types of `wardlock2.js`, another name for `wardlock.js`.
export * from './wardlock.js';
