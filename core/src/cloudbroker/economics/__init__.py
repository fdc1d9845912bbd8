"""What a job costs beyond a quote: on-prem against cloud, commitments, spot risk, what was
spent (the report)."""
