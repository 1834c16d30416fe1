// Package installedpack installs, updates, rolls back and uninstalls Packs: an InstalledPack's
// definition is the desired state (an archive digest and binding selections, or the intent to
// uninstall); the reconciler computes the plan with the same pure function as preview
// (pack.Plan), carries it out one resource at a time in dependency order, journals each step in
// status, and compensates the done steps in reverse order when one fails, so that a restart at
// any point resumes or compensates and no operation is ever stuck.
package installedpack
