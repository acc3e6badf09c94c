// Another name for `wardlock.js` (the `wardlock:lock@0.2.2` SDK), kept so
// that guests written as `import ... from './wardlock2.js'` build unchanged.
export * from './wardlock.js';
