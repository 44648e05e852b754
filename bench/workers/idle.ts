// Worker that does nothing: its peak RSS is the floor every bench child process starts from
// (plain node running compiled JS), reported next to the scenarios' figures.
import { workerMain } from '../lib/worker.js';

workerMain(async () => ({}));
