// `node --import ./hide.mjs`: registers hooks.mjs before the application loads.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
