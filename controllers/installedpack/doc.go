// Package installedpack reconciles InstalledPacks: an installation is Ready when every resource
// it manages still exists. Installing and uninstalling are the service API's job.
package installedpack
