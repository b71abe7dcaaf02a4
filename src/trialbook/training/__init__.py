"""Training-run analytics (buckets, passes, encounters, stalls) and the async RL pipeline simulator."""
