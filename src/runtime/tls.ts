/**
 * TLS material for a listener: the certificate files read, checked with node:crypto and held as
 * the exact bytes that were checked. Nothing here knows uWS or node:https; the listeners hand these
 * bytes over (src/delivery/listener.ts, src/admin/server/server.ts).
 *
 * Why check here rather than let the TLS library fail: uWS reports any bad file as "App construction
 * failed" with no reason, and its SNI path crashes the process on one. Checked here, each failure is
 * one line naming the file and what is wrong, before anything listens, and a reload that fails keeps
 * the certificate in use.
 */
import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import type { SecureContextOptions } from 'node:tls';
import { StartupError, type ServeConfig, type TlsFiles } from './config.js';
import { logError, logInfo, logWarning } from './log.js';

/**
 * TLS 1.2 suites: forward secrecy and AEAD only (ECDHE with AES-GCM or ChaCha20-Poly1305). The
 * build's default list also accepts CBC and plain-RSA key exchange. TLS 1.3's suites are fixed by
 * the TLS library (AES-128/256-GCM, ChaCha20-Poly1305); both listeners refuse TLS 1.0 and 1.1.
 */
export const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** What was loaded: plain data, so it can be posted to another thread. */
export interface TlsMaterial {
  /** The server certificate then every intermediate, PEM, as sent to clients. */
  readonly chainPem: string;
  /** The key file's bytes as read (still encrypted when it was). */
  readonly keyPem: string;
  readonly passphrase: string | null;
  /** The server certificate's serial number (hex, as openssl prints it) and validity. */
  readonly serial: string;
  readonly subject: string;
  readonly validFrom: string;
  readonly validTo: string;
  /** SHA-256 of the chain, key and passphrase: a reload whose files did not change is a no-op. */
  readonly fingerprint: string;
}

/**
 * The options of a node:https listener (admin, metrics) serving `tls`: the same policy as the
 * delivery listener, TLS 1.2 and 1.3, TLS12_CIPHERS for 1.2.
 */
export function nodeSecureContextOptions(tls: TlsMaterial): SecureContextOptions {
  const options: SecureContextOptions = { cert: tls.chainPem, key: tls.keyPem, minVersion: 'TLSv1.2', ciphers: TLS12_CIPHERS };
  if (tls.passphrase !== null) options.passphrase = tls.passphrase;
  return options;
}

/** A certificate or key that cannot be served; the message is one line for the operator. */
export class TlsLoadError extends Error {}

/** PKCS#8 encrypted, or the traditional PEM encryption header. */
const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----|^Proc-Type: 4,ENCRYPTED/m;
const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function readText(flag: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message;
    throw new TlsLoadError(`${flag} ${path}: cannot read the file (${why})`);
  }
}

function parseCertificates(flag: string, path: string, text: string): X509Certificate[] {
  const blocks = text.match(PEM_CERT) ?? [];
  if (blocks.length === 0) throw new TlsLoadError(`${flag} ${path}: no PEM certificate in the file`);
  return blocks.map((pem, i) => {
    try {
      return new X509Certificate(pem);
    } catch (err) {
      throw new TlsLoadError(`${flag} ${path}: certificate ${i + 1} cannot be parsed (${oneLine(err)})`);
    }
  });
}

function parseKey(files: TlsFiles, text: string, passphrase: string | null): KeyObject {
  const flag = `${files.flagPrefix}-key`;
  if (passphrase === null && ENCRYPTED_KEY.test(text)) {
    throw new TlsLoadError(`${flag} ${files.keyFile}: the key is encrypted and no ${files.flagPrefix}-key-passphrase-file was given`);
  }
  try {
    return createPrivateKey(passphrase === null ? { key: text, format: 'pem' } : { key: text, format: 'pem', passphrase });
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (passphrase !== null && typeof code === 'string' && /DECRYPT|BAD_PASSWORD/i.test(code + oneLine(err))) {
      throw new TlsLoadError(`${flag} ${files.keyFile}: wrong passphrase (from ${files.passphraseFile ?? ''})`);
    }
    throw new TlsLoadError(`${flag} ${files.keyFile}: not a usable PEM private key (${oneLine(err)})`);
  }
}

/**
 * Reads and checks one listener's files: every certificate parses, the key parses (with the
 * passphrase when one is given) and matches the server certificate, and the chain file holds the
 * server certificate's issuer. Expiry is not an error here (see expiryWarning): refusing to start on
 * an expired certificate would turn a renewal that came late into an outage of every client that
 * does not check.
 */
export function loadTlsMaterial(files: TlsFiles): TlsMaterial {
  const certFlag = `${files.flagPrefix}-cert`;
  const certText = readText(certFlag, files.certFile);
  const keyText = readText(`${files.flagPrefix}-key`, files.keyFile);
  let passphrase: string | null = null;
  if (files.passphraseFile !== null) {
    passphrase = readText(`${files.flagPrefix}-key-passphrase-file`, files.passphraseFile).replace(/\r?\n$/, '');
    if (passphrase === '') throw new TlsLoadError(`${files.flagPrefix}-key-passphrase-file ${files.passphraseFile}: the file is empty`);
  }
  const certs = parseCertificates(certFlag, files.certFile, certText);
  const leaf = certs[0] as X509Certificate;
  const key = parseKey(files, keyText, passphrase);
  if (!leaf.checkPrivateKey(key)) {
    throw new TlsLoadError(`${files.flagPrefix}-key ${files.keyFile}: the key does not match the certificate in ${files.certFile} (serial ${leaf.serialNumber})`);
  }
  let chain: X509Certificate[] = certs.slice(1);
  if (files.chainFile !== null) {
    const extra = parseCertificates(`${files.flagPrefix}-ca`, files.chainFile, readText(`${files.flagPrefix}-ca`, files.chainFile));
    if (!extra.some((c) => leaf.checkIssued(c)) && !chain.some((c) => leaf.checkIssued(c))) {
      throw new TlsLoadError(`${files.flagPrefix}-ca ${files.chainFile}: no certificate in it issued the certificate in ${files.certFile} (issuer: ${oneLine(leaf.issuer)})`);
    }
    chain = chain.concat(extra);
  }
  const chainPem = [leaf, ...chain].map((c) => c.toString().trim()).join('\n') + '\n';
  return {
    chainPem,
    keyPem: keyText,
    passphrase,
    serial: leaf.serialNumber,
    subject: oneLine(leaf.subject),
    validFrom: leaf.validFrom,
    validTo: leaf.validTo,
    fingerprint: createHash('sha256').update(chainPem).update('\0').update(keyText).update('\0').update(passphrase ?? '').digest('hex'),
  };
}

/** A warning line when the server certificate is outside its validity period at `now`, else null. */
export function expiryWarning(material: TlsMaterial, flag: string, now: Date = new Date()): string | null {
  const to = new Date(material.validTo);
  const from = new Date(material.validFrom);
  if (now > to) return `${flag}: the certificate (serial ${material.serial}) expired on ${to.toISOString()}; clients that check will refuse it`;
  if (now < from) return `${flag}: the certificate (serial ${material.serial}) is not valid before ${from.toISOString()}; clients that check will refuse it`;
  return null;
}

/** One line describing what is served, for the start-up and reload logs. */
export function describeMaterial(material: TlsMaterial): string {
  return `certificate serial ${material.serial} (${material.subject}), valid until ${new Date(material.validTo).toISOString()}`;
}

function oneLine(value: unknown): string {
  const text = value instanceof Error ? value.message : String(value);
  return text.replace(/\s*\n\s*/g, ', ').trim();
}

/** What the main thread serves or hands over at start: the delivery listener's and the metrics listener's material. */
export interface StartupTls {
  readonly delivery: TlsMaterial | null;
  readonly metrics: TlsMaterial | null;
}

/**
 * Start-up: every configured listener's material, checked before anything starts. A file that
 * cannot be served is a StartupError (one line, exit 1); a certificate outside its validity period
 * is a warning. Returns the delivery and metrics listeners' material (the admin listener's is
 * loaded again by the control thread that serves it).
 */
export function loadStartupTls(config: ServeConfig): StartupTls {
  let delivery: TlsMaterial | null = null;
  let metrics: TlsMaterial | null = null;
  for (const files of listenerTlsFiles(config)) {
    let material: TlsMaterial;
    try {
      material = loadTlsMaterial(files);
    } catch (err) {
      if (err instanceof TlsLoadError) throw new StartupError(err.message);
      throw err;
    }
    const warning = expiryWarning(material, `${files.flagPrefix}-cert ${files.certFile}`);
    if (warning !== null) logWarning(warning);
    if (files === config.tls) delivery = material;
    if (files === config.metricsTls) metrics = material;
  }
  return { delivery, metrics };
}

/** The TLS files of every listener that has them: delivery, admin, metrics. */
function listenerTlsFiles(config: ServeConfig): TlsFiles[] {
  const out: TlsFiles[] = [];
  for (const files of [config.tls, config.adminTls, config.metricsTls]) if (files !== null) out.push(files);
  return out;
}

/**
 * A reload (SIGHUP): the files read and checked again. Null when they cannot be served (reported,
 * the caller keeps what it serves) or did not change; the new material otherwise.
 */
export function reloadTlsMaterial(files: TlsFiles, current: TlsMaterial | null): TlsMaterial | null {
  let material: TlsMaterial;
  try {
    material = loadTlsMaterial(files);
  } catch (err) {
    logError(`TLS reload failed, still serving ${current === null ? 'the previous certificate' : describeMaterial(current)}: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  }
  if (current !== null && material.fingerprint === current.fingerprint) {
    logInfo(`TLS reload: ${files.flagPrefix}-cert and ${files.flagPrefix}-key did not change`);
    return null;
  }
  const warning = expiryWarning(material, `${files.flagPrefix}-cert ${files.certFile}`);
  if (warning !== null) logWarning(warning);
  return material;
}

/** A reload waits this long after the last change seen, so a certificate and its key written one after the other load together. */
const SETTLE_MS = 1000;

/**
 * Calls `reload` when any of the configured certificate files changes (size, mtime or the file a
 * symbolic link points to). Polling (fs.watchFile: one stat per file per interval, off the event
 * loop) rather than inotify: it follows renames and symbolic-link swaps the way ACME clients
 * replace certificates, and works on every file system. Returns the function that stops watching.
 */
export function watchTlsFiles(config: ServeConfig, reload: () => void): () => void {
  if (config.tlsWatchMs === 0) return () => undefined;
  const paths = new Set<string>();
  for (const files of listenerTlsFiles(config)) {
    for (const path of [files.certFile, files.keyFile, files.passphraseFile, files.chainFile]) if (path !== null) paths.add(path);
  }
  let timer: NodeJS.Timeout | null = null;
  const changed = (now: Stats, before: Stats): void => {
    if (now.mtimeMs === before.mtimeMs && now.size === before.size && now.ino === before.ino) return;
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      reload();
    }, SETTLE_MS);
    timer.unref();
  };
  for (const path of paths) watchFile(path, { interval: config.tlsWatchMs, persistent: false }, changed);
  return () => {
    if (timer !== null) clearTimeout(timer);
    for (const path of paths) unwatchFile(path, changed);
  };
}
