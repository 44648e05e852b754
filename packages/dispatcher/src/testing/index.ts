// Test helpers of the dispatcher core (issue 4).
export { createScriptedProvider, type ScriptedProvider, type ScriptedCall } from './scripted-provider.js';
export { plainContent } from './plain-content.js';
export { createMemoryDeadLetterSink, type MemoryDeadLetterSink } from './memory-dead-letter-sink.js';
