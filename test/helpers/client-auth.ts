import type { Config } from '../../src/config/config.js';
import { systemClock } from '../../src/core/clock.js';
import type { AuthMethod, ClientAuth } from '../../src/token/client-auth/index.js';
import type { Authenticate } from '../../src/token/client-auth/method.js';
import { FakeClock } from './fake-clock.js';
import { FakeLog } from './fakes.js';

/**
 * How `method` authenticates when configured with `config` and no secret of its own (as
 * pass-through credentials use a secret method), dated by `now` (the system clock by default).
 */
export function clientAuthOf(method: AuthMethod, config: Partial<Config> = {}, now?: number): ClientAuth {
  const clock = now === undefined ? systemClock : new FakeClock(now);
  const deps = { clock, log: new FakeLog(), startup: { clientSecret: undefined }, read: () => '' };
  return method.configure({ tokenAuthMethod: method.name, ...config } as Config, deps).clientAuth;
}

/** A client authentication of one `authenticate`, whose refusal names `credentials`. */
export function clientAuthWith(authenticate: Authenticate, credentials = 'the credentials of this test'): ClientAuth {
  return { authenticate, explainRefusal: () => ({ credentials }) };
}
