'use strict';
// The CommonJS entry: `require` resolves relock through the "require" condition of its exports map.
const relock = require('relock');
const { run } = require('./scenario.cjs');

run(relock, JSON.parse(process.argv[2])).then(
  (result) => {
    const resolved = require.resolve('relock');
    const { version } = require('relock/package.json');
    console.log(JSON.stringify({ resolved, version, exports: Object.keys(relock).sort(), ...result }));
  },
  (error) => {
    console.error(error);
    process.exitCode = 1;
  },
);
