// Test helpers of the provider adapters: startHttpReceiver, startSmtpSink, the conformance suite. `@notify/providers/testing`.
export {
  describeProviderContract,
  contractDelivery,
  type ProviderContractSubject,
  type ProviderContractFactory,
} from './provider-contract.js';
export {
  startHttpReceiver,
  type HttpReceiver,
  type HttpReceiverOptions,
  type ReceivedRequest,
  type ScriptedResponse,
} from './http-receiver.js';
export { startSmtpSink, type SmtpSink, type SmtpSinkMessage, type SmtpStage, type SmtpScriptedReply } from './smtp-sink.js';
export { ManualTimers } from './manual-timers.js';
export { verifyWebhookSignature, type WebhookVerifyInput, type WebhookVerification } from './verify-webhook.js';
