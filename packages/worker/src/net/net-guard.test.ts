import { describe, expect, it } from 'vitest';
import { checkUrl, isHostAllowed, isPrivateAddress, pinnedLookup } from './net-guard.js';

const signal = new AbortController().signal;
const noDns = async (host: string) => {
  throw Object.assign(new Error(`unexpected DNS lookup of ${host}`), { code: 'ENOTFOUND' });
};

describe('isPrivateAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '224.0.0.1',
    '239.255.255.250',
    '255.255.255.255',
    '192.0.2.1',
    '198.18.0.1',
    '::',
    '::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::127.0.0.1',
    '64:ff9b::7f00:1',
    '64:ff9b::a9fe:a9fe',
    '2002:7f00:1::',
    '2002:c0a8:101::1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'fec0::1',
    'ff02::1',
    '2001:db8::1',
    '2001::1',
    '100::1',
    'not an address',
  ])('counts %s as not public', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('counts %s as public', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});

describe('checkUrl', () => {
  describe('when the host is a private address in any spelling', () => {
    it.each([
      'http://127.0.0.1/',
      'http://2130706433/',
      'http://0x7f000001/',
      'http://0x7f.0.0.1/',
      'http://017700000001/',
      'http://0177.0.0.1/',
      'http://127.1/',
      'http://127.0.1/',
      'http://0.0.0.0/',
      'http://0/',
      'http://[::]/',
      'http://[::1]:8080/',
      'http://[::ffff:127.0.0.1]/',
      'http://[0:0:0:0:0:ffff:7f00:1]/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
      'http://192.168.0.1/',
      'http://172.16.5.4/',
      'http://100.64.1.1/',
      'http://224.0.0.251/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://[ff02::1]/',
      'https://127.0.0.1:8443/',
      'http://user:pass@127.0.0.1/',
    ])('refuses %s, saying the address is private and naming TD_HTTP_ALLOW', async (url) => {
      await expect(checkUrl(url, { allow: [], signal, resolveHost: noDns })).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/private.*refused.*TD_HTTP_ALLOW=/s),
      });
    });
  });

  it('refuses a host name that resolves to a private address, naming the address', async () => {
    const resolveHost = async () => [{ address: '10.0.0.7', family: 4 }];
    await expect(checkUrl('http://intranet.example/', { allow: [], signal, resolveHost })).rejects.toMatchObject({
      message: expect.stringMatching(
        /intranet\.example \(it resolves to 10\.0\.0\.7\).*TD_HTTP_ALLOW=intranet\.example/,
      ),
    });
  });

  it('refuses a host name when any of its addresses is private', async () => {
    const resolveHost = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '::1', family: 6 },
    ];
    await expect(checkUrl('http://mixed.example/', { allow: [], signal, resolveHost })).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/^refused to connect to mixed\.example \(it resolves to ::1\)/),
    });
  });

  it('refuses localhost through the system resolver', async () => {
    await expect(checkUrl('http://localhost:9/', { allow: [], signal })).rejects.toMatchObject({
      message: expect.stringMatching(/private/),
    });
  });

  it('accepts a public address and returns it as the pinned address', async () => {
    await expect(checkUrl('http://93.184.216.34/x', { allow: [], signal, resolveHost: noDns })).resolves.toMatchObject({
      addresses: [{ address: '93.184.216.34', family: 4 }],
    });
  });

  it('refuses schemes other than http and https', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://example.com/', 'gopher://127.0.0.1:6379/_INFO']) {
      await expect(checkUrl(url, { allow: [], signal })).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/only http and https/),
      });
    }
  });

  it('says when the URL is not a URL', async () => {
    await expect(checkUrl('not a url', { allow: [], signal })).rejects.toMatchObject({
      message: '"not a url" is not a valid URL',
    });
  });

  describe('when TD_HTTP_ALLOW lists the host', () => {
    /** The private-address refusal for `host` (not any error: a bad URL or a TypeError would not do). */
    const refusal = (host: string) => ({
      code: 'handler_error',
      message: expect.stringMatching(
        new RegExp(
          `^refused to connect to ${host.replace(/[.[\]]/g, '\\$&')}( \\(it resolves to [^)]+\\))?: .*TD_HTTP_ALLOW=`,
        ),
      ),
    });
    const pinned = (address: string, family: 4 | 6) => ({ addresses: [{ address, family }] });

    it('allows host:port exactly, and not another port of the same host', async () => {
      const allow = ['127.0.0.1:8080'];
      await expect(checkUrl('http://127.0.0.1:8080/', { allow, signal })).resolves.toMatchObject(
        pinned('127.0.0.1', 4),
      );
      await expect(checkUrl('http://127.0.0.1:8081/', { allow, signal })).rejects.toMatchObject(
        refusal('127.0.0.1:8081'),
      );
    });

    it('allows any port for a bare host entry', async () => {
      await expect(checkUrl('http://127.0.0.1:1234/', { allow: ['127.0.0.1'], signal })).resolves.toMatchObject(
        pinned('127.0.0.1', 4),
      );
    });

    it('matches the host as written, not what it resolves to', async () => {
      await expect(checkUrl('http://localhost:8080/', { allow: ['127.0.0.1:8080'], signal })).rejects.toMatchObject(
        refusal('localhost:8080'),
      );
    });

    it('compares a default port with the scheme default', async () => {
      await expect(checkUrl('http://127.0.0.1/', { allow: ['127.0.0.1:80'], signal })).resolves.toMatchObject(
        pinned('127.0.0.1', 4),
      );
      await expect(checkUrl('https://127.0.0.1/', { allow: ['127.0.0.1:80'], signal })).rejects.toMatchObject(
        refusal('127.0.0.1'),
      );
    });

    it('accepts IPv6 entries with and without brackets', async () => {
      await expect(checkUrl('http://[::1]:8080/', { allow: ['[::1]:8080'], signal })).resolves.toMatchObject(
        pinned('::1', 6),
      );
      await expect(checkUrl('http://[::1]:9/', { allow: ['::1'], signal })).resolves.toMatchObject(pinned('::1', 6));
    });
  });
});

describe('isHostAllowed', () => {
  it('ignores malformed entries', () => {
    expect(isHostAllowed(new URL('http://127.0.0.1:80/'), ['127.0.0.1:port', ''])).toBe(false);
  });
});

describe('pinnedLookup', () => {
  it('answers only with the checked addresses, whatever DNS would say now', async () => {
    const lookup = pinnedLookup({
      url: new URL('http://rebind.example/'),
      addresses: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1::1', family: 6 },
      ],
    });
    const all = await new Promise((resolve) =>
      lookup('rebind.example', { all: true }, (_e, addresses) => resolve(addresses)),
    );
    expect(all).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ]);
    const one = await new Promise((resolve) => lookup('rebind.example', { family: 6 }, (_e, a, f) => resolve([a, f])));
    expect(one).toEqual(['2606:2800:220:1::1', 6]);
  });

  it('refuses to resolve any other host', async () => {
    const lookup = pinnedLookup({ url: new URL('http://a.example/'), addresses: [{ address: '1.1.1.1', family: 4 }] });
    const error = await new Promise((resolve) => lookup('b.example', {}, (e) => resolve(e)));
    expect(error).toMatchObject({ code: 'ENOTFOUND' });
  });
});
