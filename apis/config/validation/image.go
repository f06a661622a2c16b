package validation

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/userdata"
)

var imageFamilies = sets.New(config.FamilyAL2023, config.FamilyBottlerocket, config.FamilyCustom)

// MaxUserData is the most user data a pool may bring: EC2 takes 16 KiB, and Tailor's own
// bootstrap (cluster, CA bundle, labels, taints, kubelet settings) needs the rest.
const MaxUserData = 12 << 10

// validateImage checks a pool's image, its family and its user data.
func validateImage(path *field.Path, p *config.Pool) field.ErrorList {
	var errs field.ErrorList
	selected := len(p.AMISelector.IDs) > 0 || len(p.AMISelector.Tags) > 0
	switch {
	case selected && p.AMI != "":
		errs = append(errs, field.Invalid(path.Child("amiSelector"), "<selector>", "set ami or amiSelector, not both"))
	case selected:
		errs = append(errs, validateSelector(path.Child("amiSelector"), p.AMISelector, "ami-")...)
	case !AMIAliases.Has(p.AMI) && !amiPattern.MatchString(p.AMI):
		errs = append(errs, field.Invalid(path.Child("ami"), p.AMI, fmt.Sprintf("must be an image ID (ami-...) or one of the aliases %v", sets.List(AMIAliases))))
	}
	fp := path.Child("imageFamily")
	switch {
	case !imageFamilies.Has(p.ImageFamily):
		errs = append(errs, field.NotSupported(fp, p.ImageFamily, sets.List(imageFamilies)))
	case AMIAliases.Has(p.AMI) && p.ImageFamily != p.AMI:
		errs = append(errs, field.Invalid(fp, p.ImageFamily, fmt.Sprintf("the alias %s is of family %s; choose a family only for an image ID", p.AMI, p.AMI)))
	}
	up := path.Child("userData")
	switch {
	case len(p.UserData) > MaxUserData:
		errs = append(errs, field.TooLong(up, "", MaxUserData))
	case p.ImageFamily == config.FamilyCustom && strings.TrimSpace(p.UserData) == "":
		errs = append(errs, field.Required(up, "a custom image family bootstraps from the pool's user data alone"))
	case p.ImageFamily == config.FamilyBottlerocket && p.UserData != "":
		var settings map[string]any
		if _, err := toml.Decode(p.UserData, &settings); err != nil {
			errs = append(errs, field.Invalid(up, "<user data>", "Bottlerocket user data must be TOML: "+err.Error()))
		}
	case p.ImageFamily == config.FamilyAL2023 && p.UserData != "":
		if _, err := userdata.Parts(p.UserData); err != nil {
			errs = append(errs, field.Invalid(up, "<user data>", err.Error()))
		}
	}
	return errs
}
