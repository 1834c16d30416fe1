// Package sourceregistry reconciles SourceRegistries with a static check of the registration;
// it never fetches the index (refresh is an explicit or scheduled action, not built yet).
package sourceregistry
