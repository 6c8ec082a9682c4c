import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crossSiteRefusal } from '../../src/console/operator-auth';

test('a supervisor form is taken only from the page itself, on an IP address or localhost', () => {
  const same = { origin: 'http://127.0.0.1:8787', host: '127.0.0.1:8787' };
  assert.equal(crossSiteRefusal(same), undefined);
  assert.equal(crossSiteRefusal({ ...same, 'sec-fetch-site': 'same-origin' }), undefined);
  assert.equal(crossSiteRefusal({ origin: 'http://localhost:8787', host: 'localhost:8787' }), undefined);
  assert.equal(crossSiteRefusal({ origin: 'http://[::1]:8787', host: '[::1]:8787' }), undefined);
  // No Origin, or the `null` a sandboxed frame on any site sends: refused.
  assert.match(crossSiteRefusal({ host: '127.0.0.1:8787' })!, /no Origin/);
  assert.match(crossSiteRefusal({ origin: 'null', host: '127.0.0.1:8787' })!, /no Origin/);
  assert.match(crossSiteRefusal({ origin: 'not a url', host: '127.0.0.1:8787' })!, /unreadable/);
  assert.match(crossSiteRefusal({ origin: 'http://evil.example', host: '127.0.0.1:8787' })!, /another origin/);
  assert.match(crossSiteRefusal({ ...same, 'sec-fetch-site': 'cross-site' })!, /not same-origin/);
  // A DNS name that matches its own Host is what a rebinding attack looks like: refused.
  assert.match(crossSiteRefusal({ origin: 'http://evil.example:8787', host: 'evil.example:8787' })!, /DNS rebinding/);
});
