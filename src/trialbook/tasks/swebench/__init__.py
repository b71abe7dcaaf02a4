"""SWE-bench Verified instances as task folders: for the official images (`generate`) or built here (`build`)."""
