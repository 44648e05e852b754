// The public surface of @notify/providers: the channel adapters behind the `Provider` port, the
// SSRF guard, failure classification, rate limits and webhook signing. Everything exported is
// documented where it is defined.
export type { Delivery, SendResult, Provider } from './provider.js';
export {
  CLASSIFICATION,
  type ClassificationTable,
  type Verdict,
  classifyCode,
  classifyErrno,
  parseRetryAfter,
  errorCode,
} from './classify.js';
export {
  createTargetGuard,
  addressProblem,
  parseAllowCidrs,
  systemResolver,
  TargetRefusedError,
  type TargetGuard,
  type TargetGuardOptions,
  type Resolver,
  type ResolvedAddress,
} from './webhook/ssrf.js';
export {
  DEFAULT_CONNECTIONS_PER_ORIGIN,
  HttpTimeoutError,
  createHttpAgent,
  httpPost,
  type HttpAgentOptions,
  type HttpPostRequest,
  type HttpPostResponse,
  type HttpResponseHeaders,
} from './http-post.js';
export { webhookSecretKey, signWebhook, WEBHOOK_HEADERS, type WebhookSignInput } from './webhook/signature.js';
export { createWebhookProvider, type WebhookProviderOptions, type WebhookProviderDeps, type WebhookPayload } from './webhook/webhook.js';
export { createTenantSecretSource, type TenantSecretSourceOptions } from './webhook/tenant-secrets.js';
export {
  tenantSigningSecretsGet,
  type TenantSigningSecretsGetParams,
  type StoredSigningSecret,
} from './webhook/sql/tenant-signing-secrets-get.js';
export { createSmtpProvider, messageIdFor, type SmtpProviderOptions, type SmtpProviderDeps } from './smtp/smtp.js';
export { createSmsHttpProvider, type SmsHttpProviderOptions, type SmsHttpProviderDeps } from './sms/sms-http.js';
export {
  createTokenBucket,
  withRateLimit,
  systemTimers,
  type RateLimit,
  type Timers,
  type TokenBucket,
  type RateLimitDeps,
} from './rate-limit.js';
export { createProviders, createFallbackProviders, providerOrigins, type ProvidersConfig, type ProviderRegistryDeps } from './registry.js';
export {
  endpointId,
  endpointTargetOf,
  notificationEndpointTargets,
  urlOrigin,
  type ProviderOrigins,
  ENDPOINT_STATES,
  type EndpointState,
  type EndpointTarget,
  type ProviderRole,
} from './endpoints/endpoint.js';
export {
  DEFAULT_FAILURE_RATIO,
  createEndpointGate,
  type EndpointGate,
  type EndpointHealthConfig,
  type Admission,
} from './endpoints/gate.js';
export { parseRateLimit } from './endpoints/rate-limit-text.js';
