import { describe, expect, it } from 'vitest';
import { AsVariableError, parseAsVariable, writeBackVariables } from '../../src/reconciler/export/variables.js';

const edge = (name: string, hostports: string[], description = 'd') => ({ kind: 'HTTPSEdge', name, description, hostports });

describe('export --as-variable / --env: values written back as variables', () => {
  it('parses FIELD=NAME with an optional kind and name, and refuses what is not one, naming the fix', () => {
    expect(parseAsVariable('hostports=domain')).toMatchObject({ path: ['hostports'], variable: 'domain', kind: undefined });
    expect(parseAsVariable('HTTPSEdge/web.routes.request_headers.add.x-env=tier')).toMatchObject({ kind: 'HTTPSEdge', name: 'web', path: ['routes', 'request_headers', 'add', 'x-env'], variable: 'tier' });
    expect(() => parseAsVariable('hostports')).toThrow(/write FIELD=NAME/);
    expect(() => parseAsVariable('hostport=domain')).toThrow(/no kind has a field hostport \(did you mean "hostports"\?\)/);
    expect(() => parseAsVariable('HTTPSEdg.hostports=domain')).toThrow(/no kind HTTPSEdg \(did you mean "HTTPSEdge"\?\)/);
    expect(() => parseAsVariable('hostports=1x')).toThrow(/not a variable name/);
    expect(() => parseAsVariable('routes.name=x')).toThrow(/names are identities/);
  });

  it('the environment\'s value goes back into each string that holds it; a $ before it keeps it text', () => {
    const r = writeBackVariables([edge('web', ['shop.example.com:443', 'api.shop.example.com:443'], 'cost $shop.example.com, see shop.example.com ${x}')], {
      asVariables: [parseAsVariable('hostports=domain')], values: new Map([['domain', 'shop.example.com']]), implicit: true,
    });
    expect(r.docs[0]).toMatchObject({ hostports: ['${var.domain}:443', 'api.${var.domain}:443'], description: 'cost $shop.example.com, see ${var.domain} $${x}' });
    expect(r.variables).toEqual([{ name: 'domain', type: 'string', value: 'shop.example.com', isNew: false, uses: 3 }]);
  });

  it('FIELD=NAME=VALUE: the part of each string that is VALUE becomes the variable, with no environment', () => {
    const r = writeBackVariables([edge('a', ['shop.example.com:443', 'api.shop.example.com:443']), edge('b', ['www.shop.example.com:443'])], { asVariables: [parseAsVariable('hostports=domain=shop.example.com')] });
    expect(r.docs.map((d) => (d as { hostports: unknown }).hostports)).toEqual([['${var.domain}:443', 'api.${var.domain}:443'], ['www.${var.domain}:443']]);
    expect(r.variables).toEqual([{ name: 'domain', type: 'string', value: 'shop.example.com', isNew: true, uses: 3 }]);
    expect(() => parseAsVariable('hostports=domain=a$b')).toThrow(/at least 4 characters without \$/);
    expect(() => writeBackVariables([edge('a', ['x.example.com:443'])], { asVariables: [parseAsVariable('hostports=domain=y.example.com')], values: new Map([['domain', 'x.example.com']]) }))
      .toThrow(/domain is "x.example.com" in this environment, not "y.example.com"/);
  });

  it('a new variable takes the field\'s value when every object agrees, and is refused when they differ', () => {
    const same = writeBackVariables([edge('a', ['x.example.com:443']), edge('b', ['x.example.com:443'])], { asVariables: [parseAsVariable('hostports=hosts')] });
    expect(same.docs.map((d) => (d as { hostports: unknown }).hostports)).toEqual([{ var: 'hosts' }, { var: 'hosts' }]);
    expect(same.variables).toEqual([{ name: 'hosts', type: 'list(string)', value: ['x.example.com:443'], isNew: true, uses: 2 }]);
    const differ = () => writeBackVariables([edge('a', ['x.example.com:443']), edge('b', ['y.example.com:443'])], { asVariables: [parseAsVariable('hostports=hosts')] });
    expect(differ).toThrow(AsVariableError);
    expect(differ).toThrow(/the objects differ \(HTTPSEdge\/a hostports is \["x.example.com:443"\], HTTPSEdge\/b hostports is \["y.example.com:443"\]\).*--as-variable HTTPSEdge\/a.hostports=hosts/);
  });

  it('a field no object has is a warning, and names, kinds and secret references are never written as variables', () => {
    const secret = { env: 'EDGEPLANE_SECRET_SHOP_EXAMPLE' };
    const r = writeBackVariables([{ ...edge('shop-example', ['shop.example.com:443']), routes: [{ name: 'SHOP_EXAMPLE', oidc: { client_secret: secret } }] }], {
      asVariables: [parseAsVariable('mutual_tls.certificate_authority_ids=cas')], values: new Map([['site', 'shop-example'], ['upper', 'SHOP_EXAMPLE']]), implicit: true,
    });
    expect(r.warnings).toEqual(['--as-variable mutual_tls.certificate_authority_ids=cas: no exported object has mutual_tls.certificate_authority_ids; nothing written as cas']);
    expect(r.docs[0]).toMatchObject({ name: 'shop-example', routes: [{ name: 'SHOP_EXAMPLE', oidc: { client_secret: secret } }] });
    expect(r.variables).toEqual([]);
  });

  it('a reference to an object by name is never written with a variable: names are the same in every environment', () => {
    const docs = () => [
      { ...edge('shop-example-web', ['shop-example.com:443']), routes: [{ name: 'site', match: '/', backend: { backend_id: 'shop-example-app' } }] },
      { kind: 'FailoverBackend', name: 'shop-example-app', description: 'for shop-example', backends: ['shop-example-app'] },
    ];
    const r = writeBackVariables(docs(), { asVariables: [], values: new Map([['site', 'shop-example']]), implicit: true });
    expect(r.docs[0]).toMatchObject({ name: 'shop-example-web', hostports: ['${var.site}.com:443'], routes: [{ backend: { backend_id: 'shop-example-app' } }] });
    expect(r.docs[1]).toMatchObject({ description: 'for ${var.site}', backends: ['shop-example-app'] });
    const given = writeBackVariables(docs(), { asVariables: [parseAsVariable('routes.backend.backend_id=app=shop-example-app')] });
    expect(given.docs[0]).toMatchObject({ routes: [{ backend: { backend_id: 'shop-example-app' } }] });
    expect(given.warnings).toEqual(['--as-variable routes.backend.backend_id=app=shop-example-app: HTTPSEdge/shop-example-web routes[site].backend.backend_id refers to "shop-example-app" by name, and names are the same in every environment; written as it is']);
  });
});
