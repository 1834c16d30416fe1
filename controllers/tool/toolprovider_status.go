package tool

import (
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"

	platformv1 "platform.dev/platform/apis/platform/v1"
	"platform.dev/platform/controllers/internal/reconcileutil"
)

// secretReference is one Secret a ToolProvider names, with the field path that names it.
type secretReference struct {
	path *field.Path
	ref  *platformv1.SecretReference
}

// secretReferences are the Secrets a definition names: the HTTP credential, the Secrets of
// the environment of a STDIO process and those an Extension provider binds to roles.
func secretReferences(def *platformv1.ToolProviderDefinition) []secretReference {
	var refs []secretReference
	path := field.NewPath("definition")
	if def.HTTP != nil && def.HTTP.Credential != nil {
		refs = append(refs, secretReference{path: path.Child("http", "credential"), ref: def.HTTP.Credential})
	}
	if def.Stdio != nil {
		for i := range def.Stdio.Env {
			if def.Stdio.Env[i].Secret != nil {
				refs = append(refs, secretReference{path: path.Child("stdio", "env").Index(i).Child("secret"), ref: def.Stdio.Env[i].Secret})
			}
		}
	}
	if def.Extension != nil {
		for i := range def.Extension.Secrets {
			refs = append(refs, secretReference{path: path.Child("extension", "secrets").Index(i).Child("secret"), ref: &def.Extension.Secrets[i].Secret})
		}
	}
	return refs
}

// validateDefinition checks what the provider needs to be started or reached at all: a STDIO
// provider a command, an HTTP provider an absolute http(s) URL and, with StaticBearer, a
// credential. The CRD refuses most of this already; the reconciler checks again so that objects
// stored before a schema change are reported too.
func validateDefinition(def *platformv1.ToolProviderDefinition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch def.Transport {
	case platformv1.StdioTransport:
		switch {
		case def.Stdio == nil:
			errs = append(errs, field.Required(path.Child("stdio"), "a Stdio provider needs stdio settings"))
		case def.Stdio.Command == "":
			errs = append(errs, field.Required(path.Child("stdio", "command"), "a Stdio provider needs a command"))
		}
	case platformv1.StreamableHTTPTransport:
		if def.HTTP == nil {
			return append(errs, field.Required(path.Child("http"), "a StreamableHttp provider needs http settings"))
		}
		u, err := url.Parse(def.HTTP.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, field.Invalid(path.Child("http", "url"), def.HTTP.URL, "must be an absolute http or https URL"))
		}
		if def.HTTP.AuthenticationMode == platformv1.StaticBearerToolAuthentication && def.HTTP.Credential == nil {
			errs = append(errs, field.Required(path.Child("http", "credential"), "StaticBearer authentication needs a credential Secret"))
		}
	default:
		return append(errs, field.NotSupported(path.Child("transport"), def.Transport,
			[]string{string(platformv1.StdioTransport), string(platformv1.StreamableHTTPTransport)}))
	}
	if def.Protocol == platformv1.ExtensionProtocol && def.Transport != platformv1.StreamableHTTPTransport {
		errs = append(errs, field.Invalid(path.Child("transport"), def.Transport, "an Extension provider is an HTTP service: its transport is StreamableHttp"))
	}
	return errs
}

// setProviderReadyCondition reports whether the provider can be started or reached: a complete
// definition (InvalidDefinition), a STDIO command the instance runs (CommandNotAllowed), whose
// Secrets resolve (the Resolver's reason: SecretNotFound, UseNotGranted, ...). Connectivity is
// not checked: status.connection reports the last contact.
func setProviderReadyCondition(s *providerScope) {
	status := &s.provider.Status.ResourceStatus
	def := &s.provider.Definition
	switch {
	case len(s.invalid) > 0:
		reconcileutil.SetReady(status, s.provider.Generation, false, platformv1.InvalidDefinitionReason, reconcileutil.FindingsMessage(s.invalid))
	case s.commandRefused:
		reconcileutil.SetReady(status, s.provider.Generation, false, platformv1.CommandNotAllowedReason,
			fmt.Sprintf("the command %q is not one the instance allows (Platform:Tools:AllowedCommands): it is never started", def.Stdio.Command))
	case s.secretRefusal != nil:
		reconcileutil.SetReady(status, s.provider.Generation, false, s.secretRefusal.Reason, s.secretRefusal.Message)
	case def.Transport == platformv1.StdioTransport:
		reconcileutil.SetReady(status, s.provider.Generation, true, platformv1.ResolvedReason,
			fmt.Sprintf("%s provider run as %q over STDIO; it is not started by this check", def.Protocol, def.Stdio.Command))
	default:
		reconcileutil.SetReady(status, s.provider.Generation, true, platformv1.ResolvedReason,
			fmt.Sprintf("%s provider at %s; connectivity is not checked", def.Protocol, def.HTTP.URL))
	}
}
