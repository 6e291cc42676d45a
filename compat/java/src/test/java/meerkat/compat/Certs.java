package meerkat.compat;

import java.io.OutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Test certificates, made when the tests run (no private key is committed): a CA, leaves it
 * issues (valid or expired), and the stores ZooKeeper's operators use, in PEM, PKCS12 and JKS.
 * RSA 2048 with SHA-256, v3 with the extensions both Java and rustls (webpki) expect.
 */
final class Certs {
    static final String PASSWORD = "test-only-password";
    private static final long DAY_MS = 24L * 3600 * 1000;
    private static final AtomicLong SERIAL = new AtomicLong(System.currentTimeMillis());

    /** A key pair with its certificate chain (leaf first). */
    static final class Identity {
        final KeyPair keys;
        final X509Certificate[] chain;

        Identity(KeyPair keys, X509Certificate... chain) {
            this.keys = keys;
            this.chain = chain;
        }

        X509Certificate cert() {
            return chain[0];
        }
    }

    private Certs() {
    }

    static KeyPair keyPair() throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
        g.initialize(2048);
        return g.generateKeyPair();
    }

    static Identity ca(String dn) throws Exception {
        KeyPair kp = keyPair();
        Date from = new Date(System.currentTimeMillis() - DAY_MS);
        Date to = new Date(System.currentTimeMillis() + 30 * DAY_MS);
        X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(name(dn),
                BigInteger.valueOf(SERIAL.incrementAndGet()), from, to, name(dn), kp.getPublic());
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        return new Identity(kp, sign(b, kp.getPrivate()));
    }

    /** A leaf for 127.0.0.1 / localhost, usable as server and as client; expired if asked. */
    static Identity leaf(String dn, Identity ca, boolean expired) throws Exception {
        KeyPair kp = keyPair();
        long now = System.currentTimeMillis();
        Date from = new Date(now - (expired ? 10 : 1) * DAY_MS);
        Date to = new Date(expired ? now - 2 * DAY_MS : now + 30 * DAY_MS);
        X500Name issuer = X500Name.getInstance(ca.cert().getSubjectX500Principal().getEncoded());
        X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(issuer,
                BigInteger.valueOf(SERIAL.incrementAndGet()), from, to, name(dn), kp.getPublic());
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
        b.addExtension(Extension.keyUsage, true,
                new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment));
        b.addExtension(Extension.extendedKeyUsage, false,
                new ExtendedKeyUsage(new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}));
        b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
            new GeneralName(GeneralName.iPAddress, "127.0.0.1"), new GeneralName(GeneralName.dNSName, "localhost")}));
        return new Identity(kp, sign(b, ca.keys.getPrivate()), ca.cert());
    }

    /** A name as Java reads and prints it (RFC 2253: the last RDN of the encoding first). */
    private static X500Name name(String dn) {
        return X500Name.getInstance(new javax.security.auth.x500.X500Principal(dn).getEncoded());
    }

    private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey key) throws Exception {
        return new JcaX509CertificateConverter().getCertificate(
                b.build(new JcaContentSignerBuilder("SHA256withRSA").build(key)));
    }

    /** A key store (PKCS12 or JKS) with one private key entry. */
    static void keyStore(Path path, String type, Identity id) throws Exception {
        KeyStore ks = KeyStore.getInstance(type);
        ks.load(null, null);
        ks.setKeyEntry("key", id.keys.getPrivate(), PASSWORD.toCharArray(), id.chain);
        save(path, ks);
    }

    /** A trust store (PKCS12 or JKS) of trusted certificate entries. */
    static void trustStore(Path path, String type, X509Certificate... anchors) throws Exception {
        KeyStore ks = KeyStore.getInstance(type);
        ks.load(null, null);
        for (int i = 0; i < anchors.length; i++) {
            ks.setCertificateEntry("ca" + i, anchors[i]);
        }
        save(path, ks);
    }

    private static void save(Path path, KeyStore ks) throws Exception {
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        try (OutputStream out = Files.newOutputStream(tmp)) {
            ks.store(out, PASSWORD.toCharArray());
        }
        // Replaced in one step, as an operator's tooling would, so a reader never sees half a file.
        Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** A PEM key store: the unencrypted PKCS#8 key and the chain. */
    static void pemKeyStore(Path path, Identity id) throws Exception {
        StringBuilder sb = new StringBuilder();
        pem(sb, "PRIVATE KEY", id.keys.getPrivate().getEncoded());
        for (Certificate c : id.chain) {
            pem(sb, "CERTIFICATE", c.getEncoded());
        }
        Files.writeString(path, sb.toString(), StandardCharsets.US_ASCII);
    }

    /** A PEM trust store: certificates only. */
    static void pemTrustStore(Path path, X509Certificate... anchors) throws Exception {
        StringBuilder sb = new StringBuilder();
        for (Certificate c : anchors) {
            pem(sb, "CERTIFICATE", c.getEncoded());
        }
        Files.writeString(path, sb.toString(), StandardCharsets.US_ASCII);
    }

    private static void pem(StringBuilder sb, String type, byte[] der) {
        sb.append("-----BEGIN ").append(type).append("-----\n");
        sb.append(Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)).append('\n');
        sb.append("-----END ").append(type).append("-----\n");
    }
}
