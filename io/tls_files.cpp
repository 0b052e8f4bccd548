#include "io/tls_files.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <filesystem>
#include <memory>

namespace shardopt::io {

namespace {

std::string openssl_reason() {
  const auto code = ERR_get_error();
  ERR_clear_error();
  if (code == 0)
    return "unknown OpenSSL error";
  char text[256] = {};
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

} // namespace

result<void> check_tls_files(const std::string& certificate, const std::string& key,
                             const std::string& ca) {
  if (certificate.empty() && key.empty() && ca.empty())
    return {};
  if (certificate.empty() || key.empty() || ca.empty())
    return fail_invalid("TLS needs all of --tls-cert, --tls-key and --tls-ca");
  for (const auto* path : {&certificate, &key, &ca}) {
    std::error_code ec;
    if (!std::filesystem::exists(*path, ec))
      return fail_not_found(*path + ": no such file");
  }
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{SSL_CTX_new(TLS_method()), SSL_CTX_free};
  if (!ctx)
    return fail_runtime("cannot create an OpenSSL context: " + openssl_reason());
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), certificate.c_str()) != 1)
    return fail_invalid(certificate + ": not a usable PEM certificate: " + openssl_reason());
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM) != 1)
    return fail_invalid(key + ": not a usable PEM private key: " + openssl_reason());
  if (SSL_CTX_check_private_key(ctx.get()) != 1)
    return fail_invalid(key + ": does not match the certificate " + certificate);
  if (SSL_CTX_load_verify_locations(ctx.get(), ca.c_str(), nullptr) != 1)
    return fail_invalid(ca + ": not a usable PEM CA certificate: " + openssl_reason());
  return {};
}

} // namespace shardopt::io
