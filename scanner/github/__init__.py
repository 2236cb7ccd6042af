"""The GitHub Actions protocol (workflow commands, file commands, inputs) and the pull-request comment."""
