"""Every setting declared once: its flag, its Action input, its default, its check."""
