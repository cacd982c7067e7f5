// A real OpenID provider for the SSO tests: panva/oidc-provider (OpenID Certified), with its own
// development login and consent pages. Configured by environment variables:
//   OIDC_PORT      port on 127.0.0.1
//   OIDC_CLIENTS   JSON list of clients (client_id, client_secret, redirect_uris, post_logout_redirect_uris)
//   OIDC_ACCOUNTS  JSON object: login name -> claims (email, name, preferred_username, groups, ...)
// Prints "ready <issuer>" once listening.
import Provider from "oidc-provider";

const port = Number(process.env.OIDC_PORT || 0);
const clients = JSON.parse(process.env.OIDC_CLIENTS || "[]");
const accounts = JSON.parse(process.env.OIDC_ACCOUNTS || "{}");
const issuer = `http://localhost:${port}`;

const configuration = {
  clients: clients.map((c) => ({
    response_types: ["code"],
    grant_types: ["authorization_code"],
    token_endpoint_auth_method: "client_secret_post",
    ...c,
  })),
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["name", "preferred_username", "given_name", "family_name"],
    groups: ["groups"],
  },
  scopes: ["openid", "offline_access", "email", "profile", "groups"],
  findAccount: async (ctx, id) => {
    const claims = accounts[id];
    if (!claims) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, email_verified: true, ...claims }) };
  },
  // PKCE is required of every client (S256 only, the library's default method).
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  cookies: { keys: ["clearloop-test-cookie-key"] },
  ttl: { IdToken: 600, AccessToken: 600, Session: 3600, Grant: 3600, Interaction: 600 },
};

const oidc = new Provider(issuer, configuration);
oidc.proxy = false;
const server = oidc.listen(port, "127.0.0.1", () => {
  console.log(`ready ${issuer}`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
