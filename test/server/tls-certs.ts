/** Test certificates made with openssl on the spot: a CA, a server cert for 127.0.0.1/localhost, client certs. */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** PEM files (paths) and their contents. */
export interface TestPki {
  caPath: string;
  ca: Buffer;
  serverCertPath: string;
  serverKeyPath: string;
  /** A client certificate signed by the CA. */
  client: { cert: Buffer; key: Buffer };
  /** A client certificate signed by another CA (mTLS must refuse it). */
  stranger: { cert: Buffer; key: Buffer; ca: Buffer };
}

function openssl(dir: string, args: string[]): void {
  const r = spawnSync("openssl", args, { cwd: dir, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`openssl ${args.join(" ")} failed:\n${r.stderr}`);
}

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

function ca(dir: string, name: string): void {
  openssl(dir, [
    "req",
    "-x509",
    ...EC,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.pem`,
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
  ]);
}

function signed(dir: string, name: string, by: string, ext: string): void {
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, ["req", ...EC, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`]);
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${by}.pem`,
    "-CAkey",
    `${by}.key`,
    "-CAcreateserial",
    "-out",
    `${name}.pem`,
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
  ]);
}

/** Makes the PKI in `dir`. */
export function makePki(dir: string): TestPki {
  ca(dir, "ca");
  ca(dir, "other-ca");
  signed(dir, "server", "ca", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  signed(dir, "client", "ca", "extendedKeyUsage=clientAuth\n");
  signed(dir, "stranger", "other-ca", "extendedKeyUsage=clientAuth\n");
  const read = (name: string) => readFileSync(join(dir, name));
  return {
    caPath: join(dir, "ca.pem"),
    ca: read("ca.pem"),
    serverCertPath: join(dir, "server.pem"),
    serverKeyPath: join(dir, "server.key"),
    client: { cert: read("client.pem"), key: read("client.key") },
    stranger: { cert: read("stranger.pem"), key: read("stranger.key"), ca: read("other-ca.pem") },
  };
}
