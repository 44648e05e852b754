// Worker that does nothing: its peak RSS is the floor every bench child process starts from
// (node + the tsx loader), reported next to the scenarios' figures.
import { workerMain } from '../lib/worker.js';

workerMain(async () => ({}));
