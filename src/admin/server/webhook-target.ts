/**
 * Where webhooks may be sent (docs/security.md, "Webhook targets").
 *
 * A webhook URL is chosen by an admin, and its deliveries leave from the server's own network: a
 * target on loopback, a private network, link-local (cloud metadata) or any other address that is not
 * public would let an admin token reach services no one meant to expose, and the dead letters would
 * say which internal ports answer. So by default a target is refused when its address is not public:
 * an address written in the URL (the WHATWG parser already turns `127.1`, `2130706433` and `0x7f.1`
 * into `127.0.0.1`, and `[::ffff:127.0.0.1]` into its IPv6 form), or any address its name resolves
 * to. The check runs when the webhook is registered and again at each delivery (a name may resolve
 * elsewhere by then: DNS rebinding), and the delivery connects to the address it checked, through the
 * lookup it gives node:http. `--webhook-allow-private` lifts the rule for receivers on the operator's
 * own network.
 *
 * The ranges are IANA's special-purpose ones that are not globally reachable, matched by node's
 * BlockList, which also matches an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) against the IPv4
 * ranges. The IPv4 ranges are also blocked in the IPv6 forms that carry an IPv4 address to it: NAT64
 * (`64:ff9b::/96`) and 6to4 (`2002::/16`).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { RcdError } from '../../runtime/errors.js';

/** The stable reason a delivery to a refused target is dead-lettered with: it names no address and no port. */
export const TARGET_REFUSED = 'target refused: not a public address (the server runs without --webhook-allow-private)';

/** IPv4 ranges that are not public: [network, prefix length]. */
const IPV4_INTERNAL: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", the unspecified address
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
];

/** IPv6 ranges that are not public. */
const IPV6_INTERNAL: readonly (readonly [string, number])[] = [
  ['::', 96], // unspecified, loopback, and the deprecated IPv4-compatible form
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 32], // Teredo (the IPv4 address inside is obfuscated)
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

function internalAddresses(): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of IPV4_INTERNAL) {
    list.addSubnet(network, prefix, 'ipv4');
    // The same range reached through NAT64 and through 6to4.
    list.addSubnet(`64:ff9b::${network}`, 96 + prefix, 'ipv6');
    const [a, b, c, d] = network.split('.').map(Number) as [number, number, number, number];
    list.addSubnet(`2002:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}::`, 16 + prefix, 'ipv6');
  }
  for (const [network, prefix] of IPV6_INTERNAL) list.addSubnet(network, prefix, 'ipv6');
  return list;
}

const INTERNAL = internalAddresses();

/** Whether `address` (an IP address as text) is outside the public internet. */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return INTERNAL.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The host of a URL as an address or name: without the brackets of an IPv6 literal. */
export function hostOf(url: URL): string {
  const host = url.hostname;
  return host.startsWith('[') ? host.slice(1, -1) : host;
}

/** What a delivery to a refused target fails with. */
export class TargetRefusedError extends Error {
  constructor() {
    super(TARGET_REFUSED);
    this.name = 'TargetRefusedError';
  }
}

/**
 * A lookup for node:http (the `lookup` option): resolves the name as node would, fails with
 * TargetRefusedError when any of its addresses is internal (unless `allowPrivate`), and hands node
 * the addresses it checked, so the connection goes to one of them.
 */
export function checkedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err !== null) {
        callback(err, '', 0);
        return;
      }
      if (!allowPrivate && addresses.some((a) => isInternalAddress(a.address))) {
        callback(new TargetRefusedError(), '', 0);
        return;
      }
      if (options.all === true) (callback as unknown as (e: null, all: LookupAddress[]) => void)(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** The addresses `host` resolves to; none when it does not resolve (yet). */
function resolved(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve) => {
    dnsLookup(host, { all: true }, (err, addresses) => resolve(err === null ? addresses : []));
  });
}

/**
 * The checks of a webhook URL at registration, beyond its form: no credentials (the URL is listed and
 * audited), and, unless `allowPrivate`, no internal address, written or resolved. A name that does not
 * resolve yet is accepted: each delivery checks it again.
 */
export async function checkWebhookTarget(url: URL, allowPrivate: boolean): Promise<void> {
  if (url.username !== '' || url.password !== '') {
    throw new RcdError('invalid_body', 'url must not hold credentials (user:password@): the URL is shown in lists and in the audit log; the receiver checks the signature instead');
  }
  if (allowPrivate) return;
  const host = hostOf(url);
  const addresses = isIP(host) !== 0 ? [host] : (await resolved(host)).map((a) => a.address);
  if (addresses.some(isInternalAddress)) {
    throw new RcdError('webhook_target_refused', `url "${url.href}" is not a public address (loopback, private, link-local or reserved); a receiver on the server's own network needs --webhook-allow-private`);
  }
}
