"""Resources, placement groups, the Ray session and the Tune glue (Ray's private APIs are
behind ``ray_private``)."""
