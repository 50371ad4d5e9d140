import { describe, expect, it } from 'vitest';
import { ApiError, ResponseShapeError, TransportError } from '../../src/api/errors.js';
import { FirstContact, NotTheServiceError } from '../../src/api/first-contact.js';

const base = 'https://api.example.test/v1';
const html404 = () =>
  new ApiError(404, 'HTTP_404', 'GET /v1/me: HTTP_404', {}, undefined, undefined, 'GET', '/v1/me', '', {
    contentType: 'text/html',
    serviceShaped: false,
  });
const serviceError = () =>
  new ApiError(401, 'UNAUTHORIZED', 'GET /v1/me: UNAUTHORIZED: bad key', {}, undefined, undefined, 'GET', '/v1/me');
const refused = () => new TransportError('ECONNREFUSED', 'GET /v1/me: no answer (ECONNREFUSED)', 'GET', '/v1/me');

describe('a base URL that reaches something other than the service', () => {
  it('says what came back, in one line, while the service has never answered as itself', () => {
    const contact = new FirstContact(base);
    const page = contact.judge(html404(), 'GET') as NotTheServiceError;
    expect(page).toBeInstanceOf(NotTheServiceError);
    expect(page.message).toBe(`${base} does not answer like the service (HTTP 404, text/html): is the base URL right?`);
    expect(page.transient).toBe(false);
    const shape = contact.judge(new ResponseShapeError('GET /v1/me: the answer is not JSON', 'GET', '/v1/me'), 'GET', {
      status: 200,
      contentType: 'text/html',
    }) as NotTheServiceError;
    expect(shape.what).toBe("HTTP 200, text/html, not the service's JSON");
    // Nothing answered yet: asked again for a while, then said the same way.
    const silent = contact.judge(refused(), 'GET') as NotTheServiceError;
    expect([silent.transient, silent.what]).toEqual([true, 'no answer: ECONNREFUSED']);
  });

  it("never judges a submission's answer: what it means is the policy's (it may have made a job)", () => {
    const contact = new FirstContact(base);
    const error = refused();
    expect(contact.judge(error, 'POST')).toBe(error);
  });

  it("once the service has answered as itself, every later error is the service's own (an outage, a proxy's page)", () => {
    const contact = new FirstContact(base);
    const own = serviceError();
    expect(contact.judge(own, 'GET')).toBe(own);
    const page = html404();
    expect(contact.judge(page, 'GET')).toBe(page);
    const error = refused();
    expect(contact.judge(error, 'GET')).toBe(error);
  });
});
