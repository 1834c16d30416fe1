// What the Workplace keeps in memory only: the bearer token of an independently deployed
// Workplace, and the single-use resume tokens of open questions (never in storage, never in the
// DOM, never in a URL).
import { setAuthorization } from "../shared/api";

let bearer: string | undefined;

export function setBearer(token: string | undefined) {
  bearer = token;
}

export function bearerToken(): string | undefined {
  return bearer;
}

setAuthorization(() => (bearer ? `Bearer ${bearer}` : undefined));

// The token of a conversation answers its run's next pending action.
const resumeTokens = new Map<string, string>();

export function rememberResumeToken(interactionId: string, token: string | undefined) {
  if (token) resumeTokens.set(interactionId, token);
}

export function resumeToken(interactionId: string): string | undefined {
  return resumeTokens.get(interactionId);
}

export function forgetResumeToken(interactionId: string) {
  resumeTokens.delete(interactionId);
}
