/**
 * A throw-away PKI made with Debian's openssl for the HTTPS tests: a root CA, an intermediate CA it
 * signed, and server certificates the intermediate signs for localhost and 127.0.0.1. Clients trust
 * the root only, so a server that does not send the intermediate fails verification.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Pki {
  readonly dir: string;
  /** The root CA certificate: the only thing clients trust. */
  readonly rootPem: string;
  /** The intermediate CA certificate (--tls-ca). */
  readonly intermediatePem: string;
}

export interface Leaf {
  readonly certPem: string;
  readonly keyPem: string;
  /** Hex, as openssl and node:tls print it (upper case). */
  readonly serial: string;
}

const CA_CONFIG = `[ ca ]
default_ca = local
[ local ]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any
copy_extensions = none
unique_subject = no
[ any ]
commonName = supplied
[ intermediate ]
basicConstraints = critical,CA:true,pathlen:0
keyUsage = critical,keyCertSign,cRLSign
[ leaf ]
subjectAltName = DNS:localhost,IP:127.0.0.1
basicConstraints = CA:false
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
`;

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

export function createPki(dir: string): Pki {
  writeFileSync(join(dir, 'ca.cnf'), CA_CONFIG);
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'serial'), '1000\n');
  openssl(dir, [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'root.key', '-out', 'root.pem',
    '-days', '30', '-subj', '/CN=rcd test root', '-addext', 'basicConstraints=critical,CA:true', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  openssl(dir, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'intermediate.key', '-out', 'intermediate.csr', '-subj', '/CN=rcd test intermediate']);
  openssl(dir, ['ca', '-batch', '-config', 'ca.cnf', '-cert', 'root.pem', '-keyfile', 'root.key', '-in', 'intermediate.csr', '-out', 'intermediate.pem', '-days', '30', '-extensions', 'intermediate', '-notext']);
  return { dir, rootPem: readFileSync(join(dir, 'root.pem'), 'utf8'), intermediatePem: readFileSync(join(dir, 'intermediate.pem'), 'utf8') };
}

/**
 * A server certificate for localhost signed by the intermediate. `expired`: valid only in January
 * 2020. `passphrase`: the key is written encrypted (PKCS#8, AES-256).
 */
export function issueLeaf(pki: Pki, name: string, opts: { expired?: boolean; passphrase?: string } = {}): Leaf {
  const dir = pki.dir;
  openssl(dir, ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.plain.key`, '-out', `${name}.csr`, '-subj', '/CN=localhost']);
  const dates = opts.expired === true ? ['-startdate', '20200101000000Z', '-enddate', '20200201000000Z'] : ['-days', '10'];
  openssl(dir, ['ca', '-batch', '-config', 'ca.cnf', '-cert', 'intermediate.pem', '-keyfile', 'intermediate.key', '-in', `${name}.csr`, '-out', `${name}.pem`, ...dates, '-extensions', 'leaf', '-notext']);
  if (opts.passphrase !== undefined) {
    openssl(dir, ['pkcs8', '-topk8', '-v2', 'aes-256-cbc', '-in', `${name}.plain.key`, '-out', `${name}.key`, '-passout', `pass:${opts.passphrase}`]);
  } else {
    writeFileSync(join(dir, `${name}.key`), readFileSync(join(dir, `${name}.plain.key`)));
  }
  const certPem = readFileSync(join(dir, `${name}.pem`), 'utf8');
  const serial = execFileSync('openssl', ['x509', '-in', `${name}.pem`, '-noout', '-serial'], { cwd: dir, encoding: 'utf8' }).trim().replace(/^serial=/, '');
  return { certPem, keyPem: readFileSync(join(dir, `${name}.key`), 'utf8'), serial };
}
