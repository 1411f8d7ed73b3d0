package tlsconfig

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"hash"
)

// Encrypted PKCS#8 keys ("ENCRYPTED PRIVATE KEY"), which is what OpenSSL 3 writes for
// `openssl genpkey -aes256` and `openssl pkcs8 -topk8`: PBES2 with PBKDF2 and AES-CBC (RFC 8018).
// The standard library decrypts neither this nor any other PKCS#8 encryption, and
// tls-key-file-pass must open the keys OpenSSL makes, so the few structures are read here with
// encoding/asn1 and the primitives of the standard library. Older schemes (PBES1, 3DES) are
// refused with a message.

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

type encryptedPrivateKeyInfo struct {
	Algo pkix.AlgorithmIdentifier
	Data []byte
}

type pbes2Params struct {
	KDF pkix.AlgorithmIdentifier
	Enc pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt   []byte
	Iter   int
	KeyLen int                      `asn1:"optional"`
	PRF    pkix.AlgorithmIdentifier `asn1:"optional"`
}

var errPKCS8Scheme = errors.New("unsupported encryption of the PKCS#8 key (PBES2 with PBKDF2 and AES-CBC are supported): re-encrypt it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`")

// maxPBKDF2Iterations bounds the work a key file can ask for at start or on CONFIG SET.
const maxPBKDF2Iterations = 10_000_000

// decryptPKCS8 returns the DER of the PKCS#8 key inside an EncryptedPrivateKeyInfo.
func decryptPKCS8(der []byte, pass string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, err
	}
	if !info.Algo.Algorithm.Equal(oidPBES2) {
		return nil, errPKCS8Scheme
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algo.Parameters.FullBytes, &params); err != nil {
		return nil, err
	}
	if !params.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, errPKCS8Scheme
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, err
	}
	var keyLen int
	switch {
	case params.Enc.Algorithm.Equal(oidAES128CBC):
		keyLen = 16
	case params.Enc.Algorithm.Equal(oidAES192CBC):
		keyLen = 24
	case params.Enc.Algorithm.Equal(oidAES256CBC):
		keyLen = 32
	default:
		return nil, errPKCS8Scheme
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.Enc.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("bad AES-CBC parameters in the PKCS#8 key")
	}
	if kdf.Iter < 1 || kdf.Iter > maxPBKDF2Iterations {
		return nil, errors.New("PBKDF2 iteration count of the PKCS#8 key out of range")
	}
	var prf func() hash.Hash
	switch {
	case len(kdf.PRF.Algorithm) == 0 || kdf.PRF.Algorithm.Equal(oidHMACSHA1):
		prf = sha1.New
	case kdf.PRF.Algorithm.Equal(oidHMACSHA256):
		prf = sha256.New
	case kdf.PRF.Algorithm.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, errPKCS8Scheme
	}
	key, err := pbkdf2.Key(prf, pass, kdf.Salt, kdf.Iter, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	data := info.Data
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, errors.New("bad length of the encrypted PKCS#8 key")
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, data)
	// PKCS#7 padding; a wrong password shows here (or as a key that does not parse).
	pad := int(out[len(out)-1])
	if pad < 1 || pad > aes.BlockSize {
		return nil, errBadPass
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errBadPass
		}
	}
	return out[:len(out)-pad], nil
}

var errBadPass = errors.New("bad decrypt (wrong tls-key-file-pass?)")
