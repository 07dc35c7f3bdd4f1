from checker.jitcache import drop_stale_cache

drop_stale_cache()
