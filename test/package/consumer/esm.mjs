// The ES module entry: `import` resolves relock through the "import" condition of its exports map.
import * as relock from 'relock';
import { run } from './scenario.cjs';

const result = await run(relock, JSON.parse(process.argv[2]));
console.log(JSON.stringify({ resolved: import.meta.resolve('relock'), exports: Object.keys(relock).sort(), ...result }));
