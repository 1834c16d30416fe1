// What the Workplace keeps in memory only: the bearer token of an independently deployed
// Workplace (never in storage, never in the DOM, never in a URL). Resume tokens: shared/questions.
import { setAuthorization } from "../shared/api";

let bearer: string | undefined;

export function setBearer(token: string | undefined) {
  bearer = token;
}

export function bearerToken(): string | undefined {
  return bearer;
}

setAuthorization(() => (bearer ? `Bearer ${bearer}` : undefined));
