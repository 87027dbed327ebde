// Debian 12's CivetWeb (1.15) loads OpenSSL at run time with
// dlopen("libssl.so") and dlopen("libcrypto.so") and then looks up the
// OpenSSL 1.1 API, including SSL_get_peer_certificate, which OpenSSL 3 only
// has as a macro: its TLS never starts. These two tiny libraries carry the
// sonames CivetWeb asks for. Loaded by path before CivetWeb starts
// (LoadCivetwebTlsShims), they are what its dlopen() calls return: glibc
// matches an already loaded object by soname. Every other symbol resolves in
// their dependency, the real libssl.so.3 / libcrypto.so.3. A side effect:
// TLS no longer needs the libssl-dev symlinks at run time.
//
// Built twice: with HOSTPERF_SHIM_SSL (soname libssl.so) and without
// (soname libcrypto.so, no code of its own).
#ifdef HOSTPERF_SHIM_SSL
extern "C" {
struct ssl_st;
struct x509_st;
x509_st* SSL_get1_peer_certificate(const ssl_st* ssl);
__attribute__((visibility("default"))) x509_st* SSL_get_peer_certificate(const ssl_st* ssl) {
  return SSL_get1_peer_certificate(ssl);
}
}
#endif
