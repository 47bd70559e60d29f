//! Bearer JWT: signing, verification, scopes, the server's secret.
