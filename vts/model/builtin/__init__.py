"""Every model nnvts builds itself (MobileNet; the caching, memory-domain and synthetic models).

Their goldens are computed apart from any driver (closed forms or a float64 numpy pass).
"""
