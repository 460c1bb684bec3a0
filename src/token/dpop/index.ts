/** DPoP (RFC 9449): the proxy's key, its proofs, their `htu`, and the servers' nonces. */
export { generateDpopKey, jwkThumbprint, loadDpopKey, SUPPORTED_DPOP_ALGS, type DpopKey } from './dpop-key.js';
export { dpopGateway, gatewayHtu, htuOf, type DpopGateway } from './htu.js';
export { watchDpopKeyFile, type DpopKeyWatchOptions } from './key-rotation.js';
export { asksForNonce, createDpopNonces, type DpopNonces, type NonceRole } from './nonces.js';
export { accessTokenHash, createDpopProver, type DpopProver, type DpopProverOptions, type ProofOptions } from './proof.js';
export { checkDpopSettings, type DpopStartup } from './settings.js';
export { createDpopClient, type DpopClient, type DpopClientOptions, type DpopObserver, type GatewayProofRequest } from './client.js';
